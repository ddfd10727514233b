#!/usr/bin/env python3
"""Makes the generated sources one module for their users, as they were before the core's
records moved to handoff-core.

uniffi files every type under the crate that defines it: the results and enums that
handoff-core derives (its `uniffi` feature) come out as a second module, `handoff_ffi_core`, beside
`handoff_ffi`, and uniffi has no setting that merges two crates' namespaces. So, after
`uniffi-bindgen generate`:

- Python: `handoff_ffi.py` imports `handoff_ffi_core` (as a plain module, `external_packages` in
  handoff-ffi/uniffi.toml) and re-exports its public names, so that `import handoff_ffi`
  still gives every type (`handoff_ffi.ProtocolRun`). Its own `InternalError` stays its own.
- Swift needs nothing: both .swift files are compiled into the app's one module (each with its
  FFI header and module map), where every type is visible without an import.
- Kotlin keeps the core's types in their own package, `uniffi.handoff_ffi_core`: the two files'
  runtime helpers (`RustBuffer`, `FfiConverterString`, …) would clash in one package, and a
  `typealias` cannot reach an enum's entries or a sealed class's variants. Users import both
  packages (`import uniffi.handoff_ffi.*` and `import uniffi.handoff_ffi_core.*`).

    one_module.py <out dir of the python generation>
"""

import sys
from pathlib import Path

REEXPORT = '''

# handoff-core's records and enums (generated into handoff_ffi_core.py) are this module's too:
# every name it exports but one this module defines itself (`InternalError`).
def _uniffi_reexport_core() -> None:
    import handoff_ffi_core as core

    names = globals()
    for name in core.__all__:
        if name not in names:
            names[name] = getattr(core, name)
            __all__.append(name)


_uniffi_reexport_core()
del _uniffi_reexport_core
'''


def main() -> None:
    module = Path(sys.argv[1]) / "handoff_ffi.py"
    text = module.read_text()
    if "_uniffi_reexport_core" not in text:
        module.write_text(text + REEXPORT)


if __name__ == "__main__":
    main()
