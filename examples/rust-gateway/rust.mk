# SPDX-License-Identifier: Apache-2.0
# examples/rust-gateway/rust.mk - the Rust embedding of the gateway core
# (examples/rust-gateway, std only), included by the Makefile.
#
#   make rust-gateway        cargo build --offline --release against $(BUILD)/libringsteer.so,
#                            into $(BUILD)/rust-gateway (binary: release/rust-gateway)
#   make rust-gateway-test   tests/rust/rust_gateway_test.sh $(BUILD): the layout check and
#                            the cluster test (root and network namespaces; it links
#                            against `make install`'s stage when the Makefile has one)
#
# Debian's cargo is installed (apt-get, as `make deps` installs the rest) only
# when no cargo is on PATH; `make deps` then installs it too.
RUST_GW_DIR := $(BUILD)/rust-gateway
RUST_GW_SRCS := examples/rust-gateway/Cargo.toml examples/rust-gateway/Cargo.lock \
	examples/rust-gateway/build.rs $(wildcard examples/rust-gateway/src/*.rs)

ifeq ($(shell command -v cargo 2>/dev/null),)
DEB_PACKAGES += cargo
endif

.PHONY: rust-deps rust-gateway rust-gateway-test
rust-deps:
ifeq ($(shell command -v cargo 2>/dev/null),)
	$(call install_missing,cargo)
endif

rust-gateway: rust-deps $(BUILD)/libringsteer.so $(RUST_GW_SRCS)
	RINGSTEER_LIBDIR=$(abspath $(BUILD)) cargo build --offline --release \
	  --manifest-path examples/rust-gateway/Cargo.toml --target-dir $(RUST_GW_DIR)

rust-gateway-test: rust-deps all
	tests/rust/rust_gateway_test.sh $(BUILD); tests/skip_status.sh $$? rust-gateway
