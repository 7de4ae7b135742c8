// SPDX-License-Identifier: Apache-2.0
//! libringsteer's C interface, declared by hand from the public headers
//! (include/ringsteer/gateway_core.h, gateway_store.h, drain.h, token.h,
//! store.h, proto.h).  Every struct here is #[repr(C)] and mirrors its
//! header field for field; `--print-layout` prints their sizes and offsets
//! and tests/rust/layout.c prints the C compiler's, so a header change that
//! this file does not follow fails tests/rust/rust_gateway_test.sh.
//! What the program only passes along (the core, a link, a store request,
//! a frame, the store, the store table) stays opaque.
#![allow(non_camel_case_types, dead_code)]

use std::os::raw::{c_char, c_int, c_void};

pub const RS_SECRET_MAX: usize = 4096; // token.h
pub const RS_FRAME_MAX: usize = 65536; // proto.h: bytes, length field included
pub const RS_FRAME_HEADER: usize = 6;
pub const RS_GOODBYE_SHUTDOWN: u8 = 3; // enum rs_goodbye_reason
pub const RS_GATEWAY_SERVING: c_int = 0; // enum rs_gateway_state

// enum rs_gw_link_end
pub const RS_GW_LINK_FLUSHED: c_int = 0;
pub const RS_GW_LINK_LOST: c_int = 1;
pub const RS_GW_LINK_IDLE: c_int = 2;

// enum rs_gw_reject: RS_GW_REJECT_COUNT (the counters' rejects[] length)
pub const RS_GW_REJECT_COUNT: usize = 14;
// enum rs_store_error_kind: RS_STORE_ERROR_KINDS (the counters' store_errors_kind[] length)
pub const RS_STORE_ERROR_KINDS: usize = 5;

/// struct rs_secret (token.h)
#[repr(C)]
pub struct rs_secret {
    pub key: [u8; RS_SECRET_MAX],
    pub len: usize,
}

/// struct rs_store_options (store.h)
#[repr(C)]
#[derive(Default)]
pub struct rs_store_options {
    pub ttl_ms: u32,
    pub reservation_ms: u32,
    pub busy_timeout_ms: u32,
    pub no_create: bool,
    pub read_only: bool,
}

/// struct rs_drain_config (drain.h)
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct rs_drain_config {
    pub pace_ms: u32,
    pub budget_ms: u32,
    pub membership_wait_ms: u32,
    pub max_in_flight: u32,
}

/// struct rs_gw_time (gateway_core.h)
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rs_gw_time {
    pub mono_ms: i64,
    pub wall_ms: i64,
}

/// struct rs_gw_core_config (gateway_core.h)
#[repr(C)]
pub struct rs_gw_core_config {
    pub id: *const c_char,
    pub advertise_peer: *const c_char,
    pub secret: *const rs_secret,
    pub heartbeat_ms: u32,
    pub ttl_ms: u32,
    pub hello_timeout_ms: u32,
    pub handoff_timeout_ms: u32,
    pub home_grace_ms: u32,
    pub token_ttl_s: u32,
    pub max_frame: u32,
    pub max_sessions: u32,
    pub limit_retry_ms: u32,
    pub no_placement: bool,
    pub registered: bool,
    pub drain: rs_drain_config,
    pub store_queue_max: u32,
    pub admit_deadline_ms: u32,
    pub admit_batch_max: u32,
}

pub enum rs_frame {}
pub enum rs_gw_core {}
pub enum rs_gw_link {}
pub enum rs_gw_store_req {}
pub enum rs_gw_store_ops {}
pub enum rs_store {}

/// struct rs_gw_callbacks (gateway_core.h): NULL is None.
#[repr(C)]
pub struct rs_gw_callbacks {
    pub send: Option<unsafe extern "C" fn(user: *mut c_void, link_user: *mut c_void, f: *const rs_frame)>,
    pub close: Option<unsafe extern "C" fn(user: *mut c_void, link_user: *mut c_void)>,
    pub resume: Option<unsafe extern "C" fn(user: *mut c_void, link_user: *mut c_void)>,
    pub store: Option<unsafe extern "C" fn(user: *mut c_void, req: *mut rs_gw_store_req) -> c_int>,
    pub peer_is: Option<unsafe extern "C" fn(user: *mut c_void, link_user: *mut c_void, member: *const c_char) -> bool>,
    pub log: Option<unsafe extern "C" fn(user: *mut c_void, level: *const c_char, kv: *const *const c_char)>,
    pub exit: Option<unsafe extern "C" fn(user: *mut c_void)>,
}

/// struct rs_gw_counters (gateway_core.h)
#[repr(C)]
#[derive(Clone, Copy)]
pub struct rs_gw_counters {
    pub accepts: u64,
    pub redirects_placement: u64,
    pub redirects_drain: u64,
    pub redirects_deferred: u64,
    pub over_cap_accepts: u64,
    pub stays: u64,
    pub reserved: u64,
    pub owner_fallbacks: u64,
    pub rejects: [u64; RS_GW_REJECT_COUNT],
    pub store_errors: u64,
    pub superseded_closed: u64,
    pub handoffs_completed: u64,
    pub handoffs_timed_out: u64,
    pub handoffs_abandoned: u64,
    pub degraded_accepts: u64,
    pub claims_recorded: u64,
    pub claims_superseded: u64,
    pub store_batches: u64,
    pub store_batched: u64,
    pub store_cancelled: u64,
    pub store_statements: u64,
    pub refresh_limited: u64,
    pub sandboxes_coalesced: u64,
    pub store_queue_full: u64,
    pub store_errors_kind: [u64; RS_STORE_ERROR_KINDS],
    pub arrivals_expired: u64,
    pub arrivals_timed_out: u64,
    pub arrivals_shed: u64,
    pub sandboxes_unchanged: u64,
}

/// struct rs_gw_gauges (gateway_core.h)
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct rs_gw_gauges {
    pub supervisors: u64,
    pub busiest: u64,
    pub unrecorded: u64,
    pub deferred_pending: u64,
    pub store_queue: u64,
    pub store_up: bool,
    pub registered: bool,
    pub draining: bool,
    pub stopping: bool,
    pub store_clock_skew_ms: i64,
}

extern "C" {
    // gateway_core.h
    pub fn rs_gw_core_new(
        cfg: *const rs_gw_core_config,
        cb: *const rs_gw_callbacks,
        user: *mut c_void,
        now: rs_gw_time,
        out: *mut *mut rs_gw_core,
    ) -> c_int;
    pub fn rs_gw_core_free(core: *mut rs_gw_core);
    pub fn rs_gw_core_link_open(
        core: *mut rs_gw_core,
        link_user: *mut c_void,
        source: *const c_char,
        handshaking: bool,
        now: rs_gw_time,
        out: *mut *mut rs_gw_link,
    ) -> c_int;
    pub fn rs_gw_core_link_recv(
        core: *mut rs_gw_core,
        l: *mut rs_gw_link,
        buf: *const u8,
        len: usize,
        consumed: *mut usize,
        now: rs_gw_time,
    ) -> c_int;
    pub fn rs_gw_core_link_closed(core: *mut rs_gw_core, l: *mut rs_gw_link, end: c_int, now: rs_gw_time);
    pub fn rs_gw_core_store_done(core: *mut rs_gw_core, req: *mut rs_gw_store_req, err: c_int, now: rs_gw_time);
    pub fn rs_gw_core_next_wake(core: *const rs_gw_core) -> i64;
    pub fn rs_gw_core_tick(core: *mut rs_gw_core, now: rs_gw_time);
    pub fn rs_gw_core_drain(core: *mut rs_gw_core, exit_after: bool, now: rs_gw_time);
    pub fn rs_gw_core_stop_now(core: *mut rs_gw_core, goodbye_reason: u8);
    pub fn rs_gw_core_counters(core: *const rs_gw_core) -> *const rs_gw_counters;
    pub fn rs_gw_core_gauges(core: *const rs_gw_core, g: *mut rs_gw_gauges);
    pub fn rs_gw_reject_label(r: c_int) -> *const c_char;
    pub fn rs_store_error_kind_label(kind: c_int) -> *const c_char;

    // gateway_store.h
    pub fn rs_gw_store_ops_ledger() -> *const rs_gw_store_ops;
    pub fn rs_gw_store_run(ops: *const rs_gw_store_ops, st: *mut c_void, req: *mut rs_gw_store_req, now_ms: i64) -> c_int;

    // proto.h
    pub fn rs_frame_encode(f: *const rs_frame, buf: *mut u8, cap: usize, len: *mut usize) -> c_int;
    pub fn rs_proto_member_id_ok(id: *const c_char) -> bool;

    // token.h
    pub fn rs_secret_load(path: *const c_char, out: *mut rs_secret) -> c_int;

    // store.h
    pub fn rs_store_open(url: *const c_char, opt: *const rs_store_options, out: *mut *mut rs_store) -> c_int;
    pub fn rs_store_close(st: *mut rs_store);
    pub fn rs_store_gateway_start(st: *mut rs_store, id: *const c_char, peer: *const c_char, state: c_int, now_ms: i64) -> c_int;
    pub fn rs_store_gateway_remove(st: *mut rs_store, id: *const c_char) -> c_int;
}

/// `--print-layout`: "NAME size N align N" per struct, then "NAME.FIELD N"
/// per field offset, then "const NAME VALUE" for the constants above, in
/// the order tests/rust/layout.c prints them.
pub fn print_layout() {
    use std::mem::{align_of, size_of, MaybeUninit};
    // offset_of! came in Rust 1.77; Debian 12 has 1.63: through addr_of!.
    macro_rules! st {
        ($t:ident $(, $f:ident)*) => {{
            println!("{} size {} align {}", stringify!($t), size_of::<$t>(), align_of::<$t>());
            let u = MaybeUninit::<$t>::uninit();
            let base = u.as_ptr();
            $(
                let at = unsafe { std::ptr::addr_of!((*base).$f) } as usize - base as usize;
                println!("{}.{} {}", stringify!($t), stringify!($f), at);
            )*
        }};
    }
    st!(rs_secret, key, len);
    st!(rs_store_options, ttl_ms, reservation_ms, busy_timeout_ms, no_create, read_only);
    st!(rs_drain_config, pace_ms, budget_ms, membership_wait_ms, max_in_flight);
    st!(rs_gw_time, mono_ms, wall_ms);
    st!(rs_gw_core_config, id, advertise_peer, secret, heartbeat_ms, ttl_ms, hello_timeout_ms,
        handoff_timeout_ms, home_grace_ms, token_ttl_s, max_frame, max_sessions, limit_retry_ms,
        no_placement, registered, drain, store_queue_max, admit_deadline_ms, admit_batch_max);
    st!(rs_gw_callbacks, send, close, resume, store, peer_is, log, exit);
    st!(rs_gw_counters, accepts, redirects_placement, redirects_drain, redirects_deferred,
        over_cap_accepts, stays, reserved, owner_fallbacks, rejects, store_errors, superseded_closed,
        handoffs_completed, handoffs_timed_out, handoffs_abandoned, degraded_accepts, claims_recorded,
        claims_superseded, store_batches, store_batched, store_cancelled, store_statements, refresh_limited,
        sandboxes_coalesced, store_queue_full, store_errors_kind, arrivals_expired, arrivals_timed_out,
        arrivals_shed, sandboxes_unchanged);
    st!(rs_gw_gauges, supervisors, busiest, unrecorded, deferred_pending, store_queue, store_up,
        registered, draining, stopping, store_clock_skew_ms);
    macro_rules! constant {
        ($($c:ident),*) => {{ $( println!("const {} {}", stringify!($c), $c); )* }};
    }
    constant!(RS_SECRET_MAX, RS_FRAME_MAX, RS_FRAME_HEADER, RS_GOODBYE_SHUTDOWN, RS_GATEWAY_SERVING,
              RS_GW_LINK_FLUSHED, RS_GW_LINK_LOST, RS_GW_LINK_IDLE, RS_GW_REJECT_COUNT,
              RS_STORE_ERROR_KINDS);
}
