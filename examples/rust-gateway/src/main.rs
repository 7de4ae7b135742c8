// SPDX-License-Identifier: Apache-2.0
//! rust-gateway: libringsteer's sans-I/O gateway core (gateway_core.h)
//! embedded from Rust with std only, over plaintext TCP and the SQLite (or
//! any rs_store) ledger.  The reference embedding is user/gateway/*.c (C,
//! libevent); this one uses threads and blocking sockets:
//!
//! - one Mutex holds the core and every connection; each core call is made
//!   under it, and the core's callbacks only queue (they never re-enter
//!   the core): frames to send, links to close or read again, store
//!   requests, the exit;
//! - `settle()` runs right after every core call, still under the lock: it
//!   writes the queued frames, closes what the core closed, runs the store
//!   requests (rs_gw_store_run over the ledger; SQLite is fast, and its
//!   busy timeout bounds a call) and answers them with
//!   rs_gw_core_store_done, feeds resumed links, until nothing is queued;
//! - a thread per accepted connection reads (blocking, the idle timeout
//!   three heartbeats) and hands the bytes to rs_gw_core_link_recv;
//! - a timer thread calls rs_gw_core_tick at rs_gw_core_next_wake;
//! - SIGTERM/SIGINT (a handler that only counts) starts the drain, after
//!   which the core's exit callback ends the process (its store row
//!   removed); a second signal leaves at once;
//! - --metrics serves /metrics (the C gateway's metric names, for what
//!   this program exports), /readyz and /healthz.
mod ffi;

use ffi::*;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::raw::{c_char, c_int, c_void};
use std::process;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const USAGE: &str = "usage: rust-gateway --id ID --listen ADDR:PORT --peer ADDR:PORT --secret-file FILE [options]

  --id ID                 gateway id on the ring ([a-z0-9.-], at most 253 bytes)
  --listen ADDR:PORT      where the Service delivers supervisors
  --peer ADDR:PORT        peer endpoint: listened on and advertised for redirects
  --advertise-peer A:P    advertise this peer endpoint instead of --peer
  --store URL             default sqlite:/var/lib/ringsteer/ringsteer.db
  --secret-file FILE      cluster secret for supervisor tokens (also --secret)
  --metrics ADDR:PORT     GET /metrics, /readyz, /healthz
  --heartbeat MS          store and supervisor heartbeat (default 5000)
  --ttl MS                rows older than this are dead (default 15000)
  --hello-timeout MS      close connections without HELLO by then (default 5000)
  --reservation MS        lifetime of a redirect's reservation (default 5000)
  --token-ttl SECONDS     lifetime of tokens renewed over REFRESH (default 3600)
  --home-grace MS         a departed supervisor's place kept this long (default the TTL)
  --no-placement          accept every supervisor where it lands
  --drain-budget MS       SIGTERM: hand everyone off within MS, then exit (default 25000)
  --drain-pace MS         between two drain redirects while that fits (default 50)
  --drain-max-in-flight N handoffs redirected and not yet gone, at most (default 64)
  --drain-wait MS         longest wait to see another serving gateway (default 5000)
  --handoff-timeout MS    keep a redirected supervisor's link this long (default 5000)
  --store-timeout MS      the store's busy timeout (default 1000)
  --max-sessions N        attached supervisors at most (default 0: no limit)
  --insecure              accepted for the reference gateway's sake: plaintext is all
                          this example speaks
  --print-layout          print the sizes and offsets of the C structs as declared
                          here (tests/rust/layout.c prints the headers'), then exit
";

struct Config {
    id: String,
    listen: String,
    peer: String,
    advertise_peer: Option<String>,
    store_url: String,
    secret_file: String,
    metrics: Option<String>,
    heartbeat_ms: u32,
    ttl_ms: u32,
    hello_timeout_ms: u32,
    reservation_ms: u32,
    token_ttl_s: u32,
    home_grace_ms: Option<u32>,
    no_placement: bool,
    drain: rs_drain_config,
    handoff_timeout_ms: u32,
    store_timeout_ms: u32,
    max_sessions: u32,
}

fn die(msg: &str) -> ! {
    eprintln!("rust-gateway: {msg}");
    process::exit(2);
}

fn parse_args() -> Config {
    let mut c = Config {
        id: String::new(),
        listen: String::new(),
        peer: String::new(),
        advertise_peer: None,
        store_url: "sqlite:/var/lib/ringsteer/ringsteer.db".into(),
        secret_file: String::new(),
        metrics: None,
        heartbeat_ms: 5000,
        ttl_ms: 15000,
        hello_timeout_ms: 5000,
        reservation_ms: 5000,
        token_ttl_s: 3600,
        home_grace_ms: None,
        no_placement: false,
        drain: rs_drain_config { pace_ms: 50, budget_ms: 25000, membership_wait_ms: 5000, max_in_flight: 64 },
        handoff_timeout_ms: 5000,
        store_timeout_ms: 1000,
        max_sessions: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut val = |name: &str| -> String {
            inline.clone().or_else(|| args.next()).unwrap_or_else(|| die(&format!("option {name} needs a value")))
        };
        let ms = |name: &str, v: String, min: u32| -> u32 {
            match v.parse::<u32>() {
                Ok(n) if n >= min && n <= 86_400_000 => n,
                _ => die(&format!("{name}: not a number in {min}..86400000: {v}")),
            }
        };
        match flag.as_str() {
            "--id" => c.id = val("--id"),
            "--listen" => c.listen = val("--listen"),
            "--peer" => c.peer = val("--peer"),
            "--advertise-peer" => c.advertise_peer = Some(val("--advertise-peer")),
            "--store" => c.store_url = val("--store"),
            "--secret-file" | "--secret" => c.secret_file = val("--secret-file"),
            "--metrics" => c.metrics = Some(val("--metrics")),
            "--heartbeat" => c.heartbeat_ms = ms("--heartbeat", val("--heartbeat"), 1),
            "--ttl" => c.ttl_ms = ms("--ttl", val("--ttl"), 1),
            "--hello-timeout" => c.hello_timeout_ms = ms("--hello-timeout", val("--hello-timeout"), 1),
            "--reservation" => c.reservation_ms = ms("--reservation", val("--reservation"), 1),
            "--token-ttl" => c.token_ttl_s = ms("--token-ttl", val("--token-ttl"), 1),
            "--home-grace" => c.home_grace_ms = Some(ms("--home-grace", val("--home-grace"), 0)),
            "--no-placement" => c.no_placement = true,
            "--drain-budget" => c.drain.budget_ms = ms("--drain-budget", val("--drain-budget"), 1),
            "--drain-pace" => c.drain.pace_ms = ms("--drain-pace", val("--drain-pace"), 1),
            "--drain-wait" => c.drain.membership_wait_ms = ms("--drain-wait", val("--drain-wait"), 1),
            "--drain-max-in-flight" => c.drain.max_in_flight = ms("--drain-max-in-flight", val("--drain-max-in-flight"), 1),
            "--handoff-timeout" => c.handoff_timeout_ms = ms("--handoff-timeout", val("--handoff-timeout"), 1),
            "--store-timeout" => c.store_timeout_ms = ms("--store-timeout", val("--store-timeout"), 1),
            "--max-sessions" => c.max_sessions = ms("--max-sessions", val("--max-sessions"), 0),
            "--insecure" => {}
            "--print-layout" => {
                print_layout();
                process::exit(0);
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                process::exit(0);
            }
            _ => die(&format!("unknown option {a} (try --help)")),
        }
    }
    if c.id.is_empty() || c.listen.is_empty() || c.peer.is_empty() || c.secret_file.is_empty() {
        die("--id, --listen, --peer and --secret-file are required (try --help)");
    }
    let id = CString::new(c.id.clone()).unwrap_or_else(|_| die("--id holds a NUL"));
    if !unsafe { rs_proto_member_id_ok(id.as_ptr()) } {
        die("--id must be 1 to 253 bytes of [a-z0-9.-]");
    }
    if c.ttl_ms <= c.heartbeat_ms {
        die("--ttl must exceed --heartbeat");
    }
    if c.advertise_peer.as_deref().unwrap_or(&c.peer).len() > 64 {
        die("peer endpoint longer than 64 bytes");
    }
    c
}

// ---- clocks and logs ----------------------------------------------------------

#[repr(C)]
struct timespec {
    tv_sec: i64,
    tv_nsec: i64,
}
const CLOCK_MONOTONIC: c_int = 1;
extern "C" {
    fn clock_gettime(clk: c_int, ts: *mut timespec) -> c_int;
}

/// CLOCK_MONOTONIC in milliseconds, as the C gateway's rs_mono_ms().
fn mono_ms() -> i64 {
    let mut ts = timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

fn wall_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

fn now() -> rs_gw_time {
    rs_gw_time { mono_ms: mono_ms(), wall_ms: wall_ms() }
}

/// "YYYY-MM-DDTHH:MM:SS.mmmZ" for unix milliseconds (civil from days).
fn stamp(ms: i64) -> String {
    let (secs, milli) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    let (days, sod) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z", sod / 3600, sod / 60 % 60, sod % 60)
}

fn logfmt_value(v: &str) -> String {
    if !v.is_empty() && !v.chars().any(|c| c <= ' ' || c == '"' || c == '=' || c == '\\' || c == '\x7f') {
        return v.to_string();
    }
    let mut s = String::from("\"");
    for c in v.chars() {
        match c {
            '"' | '\\' => {
                s.push('\\');
                s.push(c)
            }
            c if c < ' ' || c == '\x7f' => s.push_str(&format!("\\x{:02x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// One logfmt line on stderr, written at once: ts, level, gateway, pairs.
fn log(level: &str, who: &str, kv: &[(&str, &str)]) {
    let mut line = format!("ts={} level={} gateway={}", stamp(wall_ms()), level, who);
    for (k, v) in kv {
        line.push(' ');
        line.push_str(k);
        line.push('=');
        line.push_str(&logfmt_value(v));
    }
    line.push('\n');
    let _ = std::io::stderr().write_all(line.as_bytes());
}

fn errno_text(err: c_int) -> String {
    std::io::Error::from_raw_os_error(-err).to_string()
}

// ---- the gateway's state under the lock -----------------------------------------

/// What the core's callbacks asked for, queued while the core runs and acted
/// on by settle() once it has returned.  A heap block of its own, reached
/// by the callbacks through the raw `user` pointer only.
struct Queue {
    who: String,
    sends: Vec<(u64, Vec<u8>)>,
    closes: Vec<u64>,
    resumes: Vec<u64>,
    stores: Vec<*mut rs_gw_store_req>,
    exit: bool,
    scratch: Vec<u8>,
}

/// What one pass of settle() acts on: the queue, emptied.
struct Batch {
    sends: Vec<(u64, Vec<u8>)>,
    closes: Vec<u64>,
    resumes: Vec<u64>,
    stores: Vec<*mut rs_gw_store_req>,
    exit: bool,
}

struct Conn {
    stream: TcpStream,
    link: *mut rs_gw_link,
    inbuf: Vec<u8>,
}

struct Gw {
    core: *mut rs_gw_core,
    store: *mut rs_store,
    q: *mut Queue,
    conns: HashMap<u64, Conn>,
    next_conn: u64,
    exiting: bool,
    id: CString,
    who: String,
    max_input: usize,
}

// The raw pointers are only used under the Mutex.
unsafe impl Send for Gw {}

struct Shared {
    gw: Mutex<Gw>,
    timer_cv: Condvar, // the core's next wake may have moved
    read_cv: Condvar,  // a link's input was consumed, or it went away
    exit_cv: Condvar,  // the core asked to exit
    heartbeat_ms: u32,
    hello_timeout_ms: u32,
}

fn lock(sh: &Shared) -> MutexGuard<'_, Gw> {
    sh.gw.lock().unwrap_or_else(|e| e.into_inner())
}

impl Gw {
    fn take_queue(&mut self) -> Batch {
        // SAFETY: no core call is running (we hold the lock and are not in one).
        let q = unsafe { &mut *self.q };
        Batch {
            sends: std::mem::take(&mut q.sends),
            closes: std::mem::take(&mut q.closes),
            resumes: std::mem::take(&mut q.resumes),
            stores: std::mem::take(&mut q.stores),
            exit: std::mem::replace(&mut q.exit, false),
        }
    }

    /// Feeds a link's buffered input to the core.
    fn feed(&mut self, id: u64) {
        let core = self.core;
        let c = match self.conns.get_mut(&id) {
            Some(c) => c,
            None => return,
        };
        if c.link.is_null() || c.inbuf.is_empty() {
            return;
        }
        let mut used = 0usize;
        unsafe { rs_gw_core_link_recv(core, c.link, c.inbuf.as_ptr(), c.inbuf.len(), &mut used, now()) };
        c.inbuf.drain(..used.min(c.inbuf.len()));
    }

    /// The core forgets link id (it ended: how), and the connection goes.
    fn end_link(&mut self, id: u64, how: c_int) {
        if let Some(c) = self.conns.remove(&id) {
            let _ = c.stream.shutdown(if how == RS_GW_LINK_FLUSHED { Shutdown::Write } else { Shutdown::Both });
            if !c.link.is_null() {
                unsafe { rs_gw_core_link_closed(self.core, c.link, how, now()) };
            }
        }
    }

    /// Acts on what the core queued, until nothing is: after every core call.
    fn settle(&mut self, sh: &Shared) {
        loop {
            let Batch { sends, closes, resumes, stores, exit } = self.take_queue();
            if exit {
                self.exiting = true;
                sh.exit_cv.notify_all();
            }
            if sends.is_empty() && closes.is_empty() && resumes.is_empty() && stores.is_empty() {
                break;
            }
            let mut lost = Vec::new();
            for (id, bytes) in sends {
                if let Some(c) = self.conns.get_mut(&id) {
                    // Blocking, bounded by the write timeout (the HELLO deadline).
                    if c.stream.write_all(&bytes).is_err() && !lost.contains(&id) {
                        lost.push(id);
                    }
                }
            }
            for req in stores {
                let err = unsafe { rs_gw_store_run(rs_gw_store_ops_ledger(), self.store as *mut c_void, req, wall_ms()) };
                unsafe { rs_gw_core_store_done(self.core, req, err, now()) };
            }
            for id in resumes {
                self.feed(id);
            }
            // Written means flushed here: the writes above are synchronous.
            for id in closes {
                if !lost.contains(&id) {
                    self.end_link(id, RS_GW_LINK_FLUSHED);
                }
            }
            for id in lost {
                self.end_link(id, RS_GW_LINK_LOST);
            }
        }
        sh.timer_cv.notify_all();
        sh.read_cv.notify_all();
    }

    fn gauges(&self) -> rs_gw_gauges {
        let mut g = rs_gw_gauges::default();
        unsafe { rs_gw_core_gauges(self.core, &mut g) };
        g
    }
}

// ---- the core's callbacks: they queue, never call the core -----------------------

unsafe fn queue<'a>(user: *mut c_void) -> &'a mut Queue {
    &mut *(user as *mut Queue)
}

unsafe extern "C" fn cb_send(user: *mut c_void, link_user: *mut c_void, f: *const rs_frame) {
    let q = queue(user);
    let mut len = 0usize;
    let err = rs_frame_encode(f, q.scratch.as_mut_ptr(), q.scratch.len(), &mut len);
    if err != 0 {
        log("error", &q.who, &[("event", "encode_failed"), ("error", &errno_text(err))]);
        return;
    }
    q.sends.push((link_user as u64, q.scratch[..len].to_vec()));
}

unsafe extern "C" fn cb_close(user: *mut c_void, link_user: *mut c_void) {
    queue(user).closes.push(link_user as u64);
}

unsafe extern "C" fn cb_resume(user: *mut c_void, link_user: *mut c_void) {
    queue(user).resumes.push(link_user as u64);
}

unsafe extern "C" fn cb_store(user: *mut c_void, req: *mut rs_gw_store_req) -> c_int {
    queue(user).stores.push(req);
    0
}

unsafe extern "C" fn cb_log(user: *mut c_void, level: *const c_char, kv: *const *const c_char) {
    let q = queue(user);
    let level = CStr::from_ptr(level).to_string_lossy();
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut p = kv;
    while !(*p).is_null() && !(*p.add(1)).is_null() {
        pairs.push((
            CStr::from_ptr(*p).to_string_lossy().into_owned(),
            CStr::from_ptr(*p.add(1)).to_string_lossy().into_owned(),
        ));
        p = p.add(2);
    }
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    log(&level, &q.who, &refs);
}

unsafe extern "C" fn cb_exit(user: *mut c_void) {
    queue(user).exit = true;
}

static CALLBACKS: rs_gw_callbacks = rs_gw_callbacks {
    send: Some(cb_send),
    close: Some(cb_close),
    resume: Some(cb_resume),
    store: Some(cb_store),
    peer_is: None,
    log: Some(cb_log),
    exit: Some(cb_exit),
};

// ---- connections ------------------------------------------------------------------

fn accept_loop(sh: Arc<Shared>, lst: TcpListener) {
    for s in lst.incoming() {
        let s = match s {
            Ok(s) => s,
            Err(_) => {
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let source = s.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "unknown".into());
        let _ = s.set_nodelay(true); // frames are small and answers wait on them
        let idle = Duration::from_millis(3 * sh.heartbeat_ms as u64);
        let _ = s.set_read_timeout(Some(idle));
        let _ = s.set_write_timeout(Some(Duration::from_millis(sh.hello_timeout_ms as u64)));
        let reader = match s.try_clone() {
            Ok(r) => r,
            Err(_) => continue,
        };
        let csource = CString::new(source).unwrap_or_default();
        let id;
        {
            let mut gw = lock(&sh);
            if gw.exiting {
                continue;
            }
            gw.next_conn += 1;
            id = gw.next_conn;
            let mut link: *mut rs_gw_link = ptr::null_mut();
            let err = unsafe { rs_gw_core_link_open(gw.core, id as *mut c_void, csource.as_ptr(), false, now(), &mut link) };
            if err != 0 {
                continue; // nothing kept: the socket closes
            }
            gw.conns.insert(id, Conn { stream: s, link, inbuf: Vec::new() });
            gw.settle(&sh);
        }
        let sh2 = sh.clone();
        if thread::Builder::new().name(format!("conn-{id}")).spawn(move || read_loop(sh2, id, reader)).is_err() {
            let mut gw = lock(&sh);
            gw.end_link(id, RS_GW_LINK_LOST);
            gw.settle(&sh);
        }
    }
}

/// Reads a connection until it ends.  Input is bounded (one frame and its
/// header): past that it waits for the core to consume some (a link being
/// placed is read again when the core resumes it).
fn read_loop(sh: Arc<Shared>, id: u64, mut s: TcpStream) {
    let mut buf = vec![0u8; RS_FRAME_MAX + RS_FRAME_HEADER];
    loop {
        let room = {
            let mut gw = lock(&sh);
            loop {
                let max = gw.max_input;
                match gw.conns.get(&id) {
                    None => break 0,
                    Some(c) if c.inbuf.len() < max => break max - c.inbuf.len(),
                    Some(_) => gw = sh.read_cv.wait(gw).unwrap_or_else(|e| e.into_inner()),
                }
            }
        };
        if room == 0 {
            break; // the core is done with it
        }
        let n = room.min(buf.len());
        let r = s.read(&mut buf[..n]);
        let mut gw = lock(&sh);
        if !gw.conns.contains_key(&id) {
            break;
        }
        match r {
            Ok(0) => gw.end_link(id, RS_GW_LINK_LOST),
            Ok(n) => {
                if let Some(c) = gw.conns.get_mut(&id) {
                    c.inbuf.extend_from_slice(&buf[..n]);
                }
                gw.feed(id);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                gw.end_link(id, RS_GW_LINK_IDLE)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => gw.end_link(id, RS_GW_LINK_LOST),
        }
        gw.settle(&sh);
    }
    // Closed by the core after its last frame: read what the peer still
    // sends until it closes (or a HELLO deadline), so that closing never
    // resets a connection whose last frames are on their way.
    let deadline = Instant::now() + Duration::from_millis(sh.hello_timeout_ms as u64);
    let _ = s.set_read_timeout(Some(Duration::from_millis(100)));
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut || e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

// ---- the core's timer -----------------------------------------------------------------

fn timer_loop(sh: Arc<Shared>) {
    let mut gw = lock(&sh);
    loop {
        let wake = unsafe { rs_gw_core_next_wake(gw.core) };
        let t = mono_ms();
        if wake <= t {
            unsafe { rs_gw_core_tick(gw.core, now()) };
            gw.settle(&sh);
            continue;
        }
        let wait = (wake - t).min(1000) as u64;
        gw = sh.timer_cv.wait_timeout(gw, Duration::from_millis(wait)).unwrap_or_else(|e| e.into_inner()).0;
    }
}

// ---- signals ------------------------------------------------------------------------

const SIGINT: c_int = 2;
const SIGTERM: c_int = 15;
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" {
    fn signal(signum: c_int, handler: extern "C" fn(c_int)) -> usize;
}

extern "C" fn on_signal(_sig: c_int) {
    SIGNALS.fetch_add(1, Ordering::SeqCst); // async-signal-safe: nothing else here
}

/// Watches the signal count: the first signal drains (exit once drained),
/// a second one leaves now.
fn signal_loop(sh: Arc<Shared>) {
    let mut seen = 0;
    loop {
        thread::sleep(Duration::from_millis(20));
        let n = SIGNALS.load(Ordering::SeqCst);
        if n == seen {
            continue;
        }
        seen = n;
        let mut gw = lock(&sh);
        log("info", &gw.who, &[("event", "stopping"), ("signal", "TERM")]);
        if gw.gauges().stopping {
            unsafe { rs_gw_core_stop_now(gw.core, RS_GOODBYE_SHUTDOWN) };
            gw.settle(&sh);
            gw.exiting = true;
            sh.exit_cv.notify_all();
        } else {
            unsafe { rs_gw_core_drain(gw.core, true, now()) };
            gw.settle(&sh);
        }
    }
}

// ---- metrics ------------------------------------------------------------------------------

fn render_metrics(gw: &Gw) -> String {
    use std::fmt::Write as _;
    let g = gw.gauges();
    let k = unsafe { *rs_gw_core_counters(gw.core) };
    let id = gw.id.to_str().unwrap_or("");
    let mut b = String::new();
    let fam = |b: &mut String, name: &str, kind: &str, help: &str, lines: &[(String, String)]| {
        let _ = writeln!(b, "# HELP {name} {help}");
        let _ = writeln!(b, "# TYPE {name} {kind}");
        for (labels, v) in lines {
            let _ = writeln!(b, "{name}{{gateway=\"{id}\"{labels}}} {v}");
        }
    };
    let one = |v: u64| vec![(String::new(), v.to_string())];
    fam(&mut b, "ringsteer_gateway_supervisors", "gauge", "Supervisors attached to this gateway.", &one(g.supervisors));
    fam(&mut b, "ringsteer_gateway_busiest_supervisor_sandboxes", "gauge",
        "Most sandboxes carried by one supervisor attached to this gateway.", &one(g.busiest));
    fam(&mut b, "ringsteer_gateway_placements_total", "counter", "Placement decisions made here, by outcome.", &[
        (",outcome=\"accept\"".into(), k.accepts.to_string()),
        (",outcome=\"redirect\"".into(), (k.redirects_placement + k.redirects_drain + k.redirects_deferred).to_string()),
    ]);
    fam(&mut b, "ringsteer_gateway_redirects_total", "counter", "Redirects sent, by reason.", &[
        (",reason=\"placement\"".into(), k.redirects_placement.to_string()),
        (",reason=\"drain\"".into(), k.redirects_drain.to_string()),
        (",reason=\"deferred\"".into(), k.redirects_deferred.to_string()),
    ]);
    fam(&mut b, "ringsteer_gateway_draining", "gauge", "1 while this gateway drains.", &one(g.draining as u64));
    fam(&mut b, "ringsteer_gateway_handoffs_total", "counter",
        "Supervisors redirected by the drain, by how their old link ended.", &[
        (",result=\"completed\"".into(), k.handoffs_completed.to_string()),
        (",result=\"timeout\"".into(), k.handoffs_timed_out.to_string()),
        (",result=\"abandoned\"".into(), k.handoffs_abandoned.to_string()),
    ]);
    let rejects: Vec<(String, String)> = (0..RS_GW_REJECT_COUNT)
        .map(|r| {
            let label = unsafe { CStr::from_ptr(rs_gw_reject_label(r as c_int)) }.to_string_lossy().into_owned();
            (format!(",reason=\"{label}\""), k.rejects[r].to_string())
        })
        .collect();
    fam(&mut b, "ringsteer_gateway_rejects_total", "counter", "Connections refused, by reason.", &rejects);
    let store_errors: Vec<(String, String)> = (0..RS_STORE_ERROR_KINDS)
        .map(|kind| {
            let label =
                unsafe { CStr::from_ptr(rs_store_error_kind_label(kind as c_int)) }.to_string_lossy().into_owned();
            (format!(",kind=\"{label}\""), k.store_errors_kind[kind].to_string())
        })
        .collect();
    fam(&mut b, "ringsteer_gateway_store_errors_total", "counter",
        "Store operations that failed, by kind (full, readonly, corrupt, unavailable, other).", &store_errors);
    fam(&mut b, "ringsteer_gateway_store_up", "gauge",
        "1 when the last store operation got an answer, 0 when the store was unavailable.", &one(g.store_up as u64));
    fam(&mut b, "ringsteer_gateway_store_queue", "gauge", "Store calls handed out by the core and not answered yet.",
        &one(g.store_queue));
    fam(&mut b, "ringsteer_gateway_store_admissions_total", "counter",
        "Admissions and drain handoffs the store decided (several may share one transaction).", &one(k.store_batched));
    fam(&mut b, "ringsteer_gateway_store_admission_transactions_total", "counter",
        "Store transactions that decided admissions and drain handoffs.", &one(k.store_batches));
    fam(&mut b, "ringsteer_gateway_arrivals_expired_total", "counter",
        "Arrivals whose connection closed before the store answered: dropped unadmitted, or their answer discarded.",
        &one(k.arrivals_expired));
    fam(&mut b, "ringsteer_gateway_arrivals_timed_out_total", "counter",
        "Arrivals still queued for the store at the admission deadline: refused with REJECT LIMIT and a retry hint.",
        &one(k.arrivals_timed_out));
    fam(&mut b, "ringsteer_gateway_arrivals_shed_total", "counter",
        "Arrivals refused at once with REJECT LIMIT and a retry hint: the queue ahead would outlast the admission deadline.",
        &one(k.arrivals_shed));
    fam(&mut b, "ringsteer_gateway_degraded_accepts_total", "counter",
        "Supervisors accepted where they landed, without placement, because the store was unavailable.",
        &one(k.degraded_accepts));
    fam(&mut b, "ringsteer_gateway_unrecorded_supervisors", "gauge",
        "Attached supervisors accepted degraded that the store has not recorded yet.", &one(g.unrecorded));
    fam(&mut b, "ringsteer_gateway_deferred_placements_pending", "gauge",
        "Supervisors accepted degraded, claimed, whose deferred placement by the rule is still to come.",
        &one(g.deferred_pending));
    fam(&mut b, "ringsteer_gateway_insecure", "gauge", "1 when the gateway serves plaintext, 0 under TLS.", &one(1));
    b
}

fn serve_http(sh: &Shared, mut s: TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    let mut req = Vec::new();
    let mut buf = [0u8; 1024];
    while !req.windows(4).any(|w| w == b"\r\n\r\n") && req.len() < 8192 {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => req.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&req);
    let mut parts = head.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let (status, ctype, body) = if method != "GET" && method != "HEAD" {
        ("405 Method Not Allowed", "text/plain", "method not allowed\n".to_string())
    } else {
        match path {
            "/metrics" => ("200 OK", "text/plain; version=0.0.4; charset=utf-8", render_metrics(&lock(sh))),
            "/readyz" => {
                let g = lock(sh).gauges();
                if g.registered && !g.draining && !g.stopping {
                    ("200 OK", "text/plain", "ready\n".into())
                } else {
                    ("503 Service Unavailable", "text/plain",
                     if g.draining { "draining\n" } else { "not registered\n" }.into())
                }
            }
            "/healthz" => ("200 OK", "text/plain", "ok\n".into()),
            _ => ("404 Not Found", "text/plain", "not found\n".into()),
        }
    };
    let mut out = format!("HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    if method != "HEAD" {
        out.push_str(&body);
    }
    let _ = s.write_all(out.as_bytes());
    let _ = s.shutdown(Shutdown::Write);
}

fn metrics_loop(sh: Arc<Shared>, lst: TcpListener) {
    for s in lst.incoming().flatten() {
        let sh = sh.clone();
        let _ = thread::Builder::new().name("http".into()).spawn(move || serve_http(&sh, s));
    }
}

// ---- main -------------------------------------------------------------------------------

fn bind(who: &str, what: &str, addr: &str) -> TcpListener {
    match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            log("error", who, &[("event", "listen_failed"), (what, addr), ("error", &e.to_string())]);
            process::exit(1);
        }
    }
}

fn main() {
    let cfg = parse_args();
    let who = cfg.id.clone();
    let advertise = cfg.advertise_peer.clone().unwrap_or_else(|| cfg.peer.clone());
    unsafe {
        signal(SIGTERM, on_signal);
        signal(SIGINT, on_signal);
    }

    // The secret and the config's strings outlive the core: leaked on purpose.
    let secret: &'static mut rs_secret =
        Box::leak(Box::new(rs_secret { key: [0; RS_SECRET_MAX], len: 0 }));
    let path = CString::new(cfg.secret_file.clone()).unwrap_or_default();
    let err = unsafe { rs_secret_load(path.as_ptr(), secret) };
    if err != 0 {
        log("error", &who, &[("event", "secret_failed"), ("file", &cfg.secret_file), ("error", &errno_text(err))]);
        process::exit(1);
    }
    let opt = rs_store_options {
        ttl_ms: cfg.ttl_ms,
        reservation_ms: cfg.reservation_ms,
        busy_timeout_ms: cfg.store_timeout_ms,
        ..Default::default()
    };
    let url = CString::new(cfg.store_url.clone()).unwrap_or_default();
    let mut store: *mut rs_store = ptr::null_mut();
    let err = unsafe { rs_store_open(url.as_ptr(), &opt, &mut store) };
    if err != 0 {
        log("error", &who, &[("event", "store_failed"), ("url", &cfg.store_url), ("error", &errno_text(err))]);
        process::exit(1);
    }
    let listen_lst = bind(&who, "listen", &cfg.listen);
    let peer_lst = bind(&who, "peer", &cfg.peer);
    let metrics_lst = cfg.metrics.as_deref().map(|m| bind(&who, "metrics", m));

    // A new process holds no connections: rows a previous one left go.
    let id: &'static CStr = Box::leak(CString::new(cfg.id.clone()).unwrap().into_boxed_c_str());
    let peer: &'static CStr = Box::leak(CString::new(advertise.clone()).unwrap().into_boxed_c_str());
    let err = unsafe { rs_store_gateway_start(store, id.as_ptr(), peer.as_ptr(), RS_GATEWAY_SERVING, wall_ms()) };
    if err != 0 {
        log("warn", &who, &[("event", "store_error"), ("op", "register"), ("error", &errno_text(err))]);
    }
    let core_cfg = rs_gw_core_config {
        id: id.as_ptr(),
        advertise_peer: peer.as_ptr(),
        secret,
        heartbeat_ms: cfg.heartbeat_ms,
        ttl_ms: cfg.ttl_ms,
        hello_timeout_ms: cfg.hello_timeout_ms,
        handoff_timeout_ms: cfg.handoff_timeout_ms,
        home_grace_ms: cfg.home_grace_ms.unwrap_or(cfg.ttl_ms),
        token_ttl_s: cfg.token_ttl_s,
        max_frame: RS_FRAME_MAX as u32,
        max_sessions: cfg.max_sessions,
        limit_retry_ms: 5000,
        no_placement: cfg.no_placement,
        registered: err == 0,
        drain: cfg.drain,
        store_queue_max: 0, // the core's default
        admit_deadline_ms: 0, // the core's default: the supervisors' dial deadline
        admit_batch_max: 0,   // the core's default, RS_GW_ADMIT_BATCH_DEFAULT
    };
    let q = Box::into_raw(Box::new(Queue {
        who: who.clone(),
        sends: Vec::new(),
        closes: Vec::new(),
        resumes: Vec::new(),
        stores: Vec::new(),
        exit: false,
        scratch: vec![0u8; RS_FRAME_MAX],
    }));
    let mut core: *mut rs_gw_core = ptr::null_mut();
    let err = unsafe { rs_gw_core_new(&core_cfg, &CALLBACKS, q as *mut c_void, now(), &mut core) };
    if err != 0 {
        log("error", &who, &[("event", "core_failed"), ("error", &errno_text(err))]);
        process::exit(1);
    }
    let sh = Arc::new(Shared {
        gw: Mutex::new(Gw {
            core,
            store,
            q,
            conns: HashMap::new(),
            next_conn: 0,
            exiting: false,
            id: CString::from(id),
            who: who.clone(),
            max_input: RS_FRAME_MAX + RS_FRAME_HEADER,
        }),
        timer_cv: Condvar::new(),
        read_cv: Condvar::new(),
        exit_cv: Condvar::new(),
        heartbeat_ms: cfg.heartbeat_ms,
        hello_timeout_ms: cfg.hello_timeout_ms,
    });

    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
        thread::Builder::new().name(name.into()).spawn(f).unwrap_or_else(|e| {
            log("error", &who, &[("event", "thread_failed"), ("error", &e.to_string())]);
            process::exit(1)
        });
    };
    { let s = sh.clone(); spawn("listen", Box::new(move || accept_loop(s, listen_lst))); }
    { let s = sh.clone(); spawn("peer", Box::new(move || accept_loop(s, peer_lst))); }
    if let Some(l) = metrics_lst { let s = sh.clone(); spawn("metrics", Box::new(move || metrics_loop(s, l))); }
    { let s = sh.clone(); spawn("timer", Box::new(move || timer_loop(s))); }
    { let s = sh.clone(); spawn("signals", Box::new(move || signal_loop(s))); }
    log("info", &who, &[("event", "started"), ("listen", &cfg.listen), ("peer", &advertise),
        ("store", &cfg.store_url), ("placement", if cfg.no_placement { "off" } else { "on" }), ("tls", "off"),
        ("embedding", "rust")]);
    {
        let mut gw = lock(&sh);
        gw.settle(&sh);
        while !gw.exiting {
            gw = sh.exit_cv.wait(gw).unwrap_or_else(|e| e.into_inner());
        }
        // Stopping and drained (or told twice): every link is told, closed
        // once its output is written; then our row goes with its sessions.
        unsafe { rs_gw_core_stop_now(gw.core, RS_GOODBYE_SHUTDOWN) };
        gw.settle(&sh);
        let ids: Vec<u64> = gw.conns.keys().copied().collect();
        for cid in ids {
            gw.end_link(cid, RS_GW_LINK_FLUSHED);
        }
        gw.settle(&sh);
        let err = unsafe { rs_store_gateway_remove(gw.store, gw.id.as_ptr()) };
        if err != 0 {
            log("warn", &who, &[("event", "store_error"), ("op", "remove"), ("error", &errno_text(err))]);
        }
        log("info", &who, &[("event", "exited")]);
        unsafe { rs_store_close(gw.store) };
        gw.store = ptr::null_mut();
        // Exits with the lock held: no other thread calls the core again.
        process::exit(0);
    }
}
