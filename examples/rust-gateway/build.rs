// SPDX-License-Identifier: Apache-2.0
//! Links libringsteer.so: from $RINGSTEER_LIBDIR when set (a `make install`
//! stage's lib directory, or the repository's build/), else the linker's
//! default paths.  std only: no bindgen, no pkg-config crate.
use std::env;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=RINGSTEER_LIBDIR");
    if let Ok(dir) = env::var("RINGSTEER_LIBDIR") {
        if !dir.is_empty() {
            if !Path::new(&dir).join("libringsteer.so").exists() {
                println!("cargo:warning=RINGSTEER_LIBDIR={dir} holds no libringsteer.so");
            }
            println!("cargo:rustc-link-search=native={dir}");
        }
    }
    println!("cargo:rustc-link-lib=dylib=ringsteer");
}
