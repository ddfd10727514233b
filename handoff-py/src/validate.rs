//! `handoff_core.Limits`: size and shape limits on everything that comes from outside.

use handoff_core as core;
use pyo3::prelude::*;

use crate::convert::Args;
use crate::errors::Result;

/// Size and shape limits. Each argument left `None` keeps the core's default (256 KiB per
/// record, 64 KiB per field or item, 1024 items per list, nesting depth 64). `max_depth` is at
/// most `handoff_core.MAX_DEPTH` (100), so that every reader can read records back.
#[pyclass(module = "handoff_core", name = "Limits", frozen)]
pub struct Limits {
    pub(crate) inner: core::Limits,
}

#[pymethods]
impl Limits {
    #[new]
    #[pyo3(signature = (max_record_bytes=None, max_field_bytes=None, max_list_items=None, max_depth=None))]
    fn py_new(
        max_record_bytes: Option<&Bound<'_, PyAny>>,
        max_field_bytes: Option<&Bound<'_, PyAny>>,
        max_list_items: Option<&Bound<'_, PyAny>>,
        max_depth: Option<&Bound<'_, PyAny>>,
    ) -> Result<Limits> {
        let mut args = Args::new();
        let mut inner = core::Limits::default();
        let whole = "a whole number at least 0";
        if let Some(n) = args.opt_int("max_record_bytes", max_record_bytes, whole) {
            inner.max_record_bytes = n;
        }
        if let Some(n) = args.opt_int("max_field_bytes", max_field_bytes, whole) {
            inner.max_field_bytes = n;
        }
        if let Some(n) = args.opt_int("max_list_items", max_list_items, whole) {
            inner.max_list_items = n;
        }
        if let Some(n) = args.opt_int("max_depth", max_depth, whole) {
            inner.max_depth = n;
        }
        args.finish()?;
        inner.check()?;
        Ok(Limits { inner })
    }

    #[getter]
    fn max_record_bytes(&self) -> usize {
        self.inner.max_record_bytes
    }
    #[getter]
    fn max_field_bytes(&self) -> usize {
        self.inner.max_field_bytes
    }
    #[getter]
    fn max_list_items(&self) -> usize {
        self.inner.max_list_items
    }
    #[getter]
    fn max_depth(&self) -> usize {
        self.inner.max_depth
    }

    fn __repr__(&self) -> String {
        format!(
            "Limits(max_record_bytes={}, max_field_bytes={}, max_list_items={}, max_depth={})",
            self.inner.max_record_bytes,
            self.inner.max_field_bytes,
            self.inner.max_list_items,
            self.inner.max_depth
        )
    }
}
