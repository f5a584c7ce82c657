//! Racecheck and bounds check of team memory, as compute-sanitizer's racecheck and memcheck
//! see shared memory on a GPU.
//!
//! The retargeted image calls `__vgpu_shared_access` before each plain load, store and
//! `memcpy`/`memset` through a generic or team-memory pointer (`build-tools`'
//! `vgpu::instrument`). Addresses outside team memory (the image's `vgpu_shared` section and
//! the dynamic shared buffer) return at once. Inside it:
//! - an access that leaves its object (into the redzone after it, or past the dynamic bytes
//!   the launch asked for) is out of bounds;
//! - a word written by one thread and read or written by another, with no meeting between
//!   them that both took part in, is a hazard. Meetings are the hardware's: a barrier of the
//!   whole team ends an interval for everyone; a named barrier with a count, an mbarrier phase
//!   or a warp sync (`bar.warp.sync`; shuffles and votes only exchange values) orders what its
//!   participants did before it (vector clocks, kept
//!   sparse: each thread's knowledge of the others since the last whole-team barrier). Atomics
//!   are not watched, so a barrier built from them synchronizes nothing here, as for
//!   compute-sanitizer. OpenMP's locks and critical sections do order their
//!   threads, as the program means, though the runtime builds them from atomics: the runtime
//!   marks where a thread took and releases one (`__vgpu_ptx_note_lock_*`). So does its
//!   counting barrier (atomics and a spin: the barrier of part of a team on amdgcn, where the
//!   hardware has none), whose phase each thread releases on arriving and takes on leaving.
//!
//! Findings are printed when the launch ends, each distinct pair of places once, with the
//! kernel, team, threads, object and the source lines when the image has them.

use crate::team;
use core::ffi::{c_char, CStr};
use core::sync::atomic::{AtomicUsize, Ordering};
use rustomp_abi::{VgpuAccessSite, VgpuLaunch, VgpuSharedLayout, VGPU_CHECK_NONE, VGPU_CHECK_WARN};
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// Team memory of the checked launch running now (empty ranges otherwise): the image's
/// section and the dynamic shared buffer.
static STATIC_BEGIN: AtomicUsize = AtomicUsize::new(0);
static STATIC_LEN: AtomicUsize = AtomicUsize::new(0);
static DYNAMIC_BEGIN: AtomicUsize = AtomicUsize::new(0);
static DYNAMIC_LEN: AtomicUsize = AtomicUsize::new(0);
/// One checked launch at a time (the ranges above are the process's).
static CHECKED_LAUNCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Distinct findings printed per launch; the rest are counted.
const MAX_REPORTS: usize = 16;

std::thread_local! {
    static CHECKER: RefCell<Option<Checker>> = const { RefCell::new(None) };
}

/// A checked access (`kind` 0: read, 1: write) of `bytes` at `address` by the calling thread.
///
/// # Safety
/// `site` is the image's site constant for the access (or null).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_shared_access(
    address: *const u8,
    bytes: u64,
    kind: u32,
    site: *const VgpuAccessSite,
) {
    let a = address as usize;
    let in_static =
        a.wrapping_sub(STATIC_BEGIN.load(Ordering::Relaxed)) < STATIC_LEN.load(Ordering::Relaxed);
    let in_dynamic =
        a.wrapping_sub(DYNAMIC_BEGIN.load(Ordering::Relaxed)) < DYNAMIC_LEN.load(Ordering::Relaxed);
    if !(in_static || in_dynamic) {
        return;
    }
    with_checker(|c| c.access(a, bytes as usize, kind == 1, Site(site)));
}

/// The same for an `addrspace(3)` pointer (the same address on the host).
///
/// # Safety
/// As [`__vgpu_shared_access`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_shared_access_as3(
    address: *const u8,
    bytes: u64,
    kind: u32,
    site: *const VgpuAccessSite,
) {
    // SAFETY: the caller's.
    unsafe { __vgpu_shared_access(address, bytes, kind, site) }
}

/// The device runtime's mark after a lock was set or a critical section entered (`object`:
/// the lock or the section's name): what its last holders did before releasing it is ordered
/// before the caller's present.
///
/// # Safety
/// Only the address is used.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_ptx_note_lock_acquired(object: *const u8) {
    with_checker(|c| {
        let me = team::thread() as usize;
        if let Some(released) = c.sync_objects.get(&(object as usize)) {
            merge(&mut c.clocks.known[me], released);
        }
    });
}

/// The device runtime's mark before a lock is unset or a critical section left.
///
/// # Safety
/// Only the address is used.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __vgpu_ptx_note_lock_released(object: *const u8) {
    with_checker(|c| {
        let me = team::thread();
        let released = c.sync_objects.entry(object as usize).or_default();
        merge(released, &c.clocks.known[me as usize]);
        merge(released, &[(me, c.clocks.own[me as usize])]);
        c.clocks.own[me as usize] += 1;
    });
}

fn with_checker(f: impl FnOnce(&mut Checker)) {
    CHECKER.with(|c| {
        if let Ok(mut c) = c.try_borrow_mut() {
            if let Some(c) = c.as_mut() {
                f(c);
            }
        }
    });
}

/// The check of one launch, while it runs on the calling thread.
pub struct Launch {
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

impl Launch {
    /// Starts checking `launch` if it asks for it and its image has a team-memory layout.
    pub fn begin(
        launch: &VgpuLaunch,
        kernel: &str,
        dynamic_buffer: *const u8,
        dynamic_capacity: usize,
    ) -> Option<Launch> {
        if launch.checks == VGPU_CHECK_NONE || launch.shared_layout.is_null() {
            return None;
        }
        // SAFETY: the plugin's pointer to the image's layout, which lives with the image.
        let layout: VgpuSharedLayout = unsafe { *launch.shared_layout };
        let count = (layout.objects_end as usize).saturating_sub(layout.objects as usize)
            / size_of::<rustomp_abi::VgpuSharedObject>();
        let mut objects: Vec<Object> = (0..count)
            .map(|i| {
                // SAFETY: `count` entries of the image's table.
                let o = unsafe { *layout.objects.add(i) };
                Object {
                    start: o.address as usize,
                    bytes: o.bytes as usize,
                    name: o.name,
                }
            })
            .collect();
        objects.sort_by_key(|o| o.start);
        let one_at_a_time = CHECKED_LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
        let static_len = (layout.end as usize).saturating_sub(layout.begin as usize);
        let checker = Checker {
            kernel: kernel.to_string(),
            team: 0,
            static_begin: layout.begin as usize,
            static_len,
            dynamic_begin: dynamic_buffer as usize,
            dynamic_bytes: launch.dynamic_shared_bytes as usize,
            objects,
            words: Vec::new(),
            touched: Vec::new(),
            clocks: Clocks::default(),
            joins: HashMap::new(),
            sync_objects: HashMap::new(),
            seen: HashSet::new(),
            reports: Vec::new(),
            hazards: 0,
            out_of_bounds: 0,
            warn_only: launch.checks == VGPU_CHECK_WARN,
        };
        CHECKER.with(|c| *c.borrow_mut() = Some(checker));
        STATIC_BEGIN.store(layout.begin as usize, Ordering::Relaxed);
        STATIC_LEN.store(static_len, Ordering::Relaxed);
        DYNAMIC_BEGIN.store(dynamic_buffer as usize, Ordering::Relaxed);
        DYNAMIC_LEN.store(dynamic_capacity, Ordering::Relaxed);
        Some(Launch {
            _one_at_a_time: one_at_a_time,
        })
    }

    /// Ends the check: the findings printed; `Err` when they fail the launch.
    pub fn end(self) -> Result<(), String> {
        let checker = CHECKER.with(|c| c.borrow_mut().take());
        let Some(c) = checker else { return Ok(()) };
        if c.reports.is_empty() {
            return Ok(());
        }
        for r in &c.reports {
            eprintln!("rustomp virtual GPU: {r}");
        }
        let summary = format!(
            "kernel {}: racecheck found {} hazard(s) and {} out-of-bounds access(es) of team memory ({} shown above)",
            c.kernel,
            c.hazards,
            c.out_of_bounds,
            c.reports.len()
        );
        if c.warn_only {
            eprintln!("rustomp virtual GPU: {summary}");
            Ok(())
        } else {
            Err(format!(
                "{summary}; RUSTOMP_VGPU_RACECHECK=warn reports them and goes on, =0 checks nothing"
            ))
        }
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        for range in [&STATIC_BEGIN, &STATIC_LEN, &DYNAMIC_BEGIN, &DYNAMIC_LEN] {
            range.store(0, Ordering::Relaxed);
        }
        CHECKER.with(|c| c.borrow_mut().take());
    }
}

/// A new team begins: its team memory holds nothing of the last one's.
pub fn begin_team(team: u32, threads: u32) {
    with_checker(|c| {
        c.team = team;
        let words = c.first_dynamic_word() + c.dynamic_bytes.div_ceil(4);
        if c.words.len() == words {
            // A team touches few of the words: resetting those is what costs per team.
            for &index in &c.touched {
                let word = &mut c.words[index];
                word.write = None;
                word.reads.clear();
            }
        } else {
            c.words.clear();
            c.words.resize_with(words, Word::default);
        }
        c.touched.clear();
        c.clocks.reset(threads);
        c.joins.clear();
        c.sync_objects.clear();
    });
}

/// A meeting of every thread of the team has completed: all earlier accesses are ordered
/// before all later ones.
pub fn whole_team_met() {
    with_checker(|c| {
        c.clocks.next_epoch();
        c.sync_objects.clear();
    });
}

/// Which partial meeting: a named barrier, an mbarrier or a warp, and its phase.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Meeting {
    Named(u32, u64),
    Mbarrier(usize, u64),
    Warp(u32),
}

/// The calling thread arrives at a meeting of some of the team's threads.
pub fn arrive(meeting: Meeting) {
    with_checker(|c| {
        let me = team::thread();
        let join = c.joins.entry(meeting).or_default();
        join.pending += 1;
        merge(&mut join.known, &c.clocks.known[me as usize]);
        merge(&mut join.known, &[(me, c.clocks.own[me as usize])]);
    });
}

/// The calling thread leaves the meeting it arrived at: it has seen what every participant did
/// before arriving.
pub fn depart(meeting: Meeting) {
    with_checker(|c| {
        let me = team::thread() as usize;
        let Some(join) = c.joins.get_mut(&meeting) else {
            return;
        };
        // What the thread knew when it arrived is in the join already, and a waiting thread
        // learns nothing: the join is its knowledge now (a copy, not a merge: a wavefront's
        // 64 lanes each leave every cross-lane meeting of a critical section's loop).
        c.clocks.known[me].clone_from(&join.known);
        join.pending -= 1;
        if join.pending == 0 {
            c.joins.remove(&meeting);
        }
        c.clocks.own[me] += 1;
    });
}

/// `merge` without moving anything when `into` already has every thread of `from` (the usual
/// case: the threads of a meeting come to know the same others); false, and `into` unchanged,
/// otherwise.
fn raise_in_place(into: &mut [(u32, u32)], from: &[(u32, u32)]) -> bool {
    let mut at = 0;
    for &(thread, _) in from {
        match into[at..].iter().position(|&(t, _)| t >= thread) {
            Some(i) if into[at + i].0 == thread => at += i + 1,
            _ => return false,
        }
    }
    let mut at = 0;
    for &(thread, clock) in from {
        while into[at].0 != thread {
            at += 1;
        }
        into[at].1 = into[at].1.max(clock);
        at += 1;
    }
    true
}

/// `into` with each thread's clock the larger of both (both sorted by thread).
fn merge(into: &mut Vec<(u32, u32)>, from: &[(u32, u32)]) {
    match from {
        [] => {}
        [(thread, clock)] => match into.binary_search_by_key(thread, |&(t, _)| t) {
            Ok(i) => into[i].1 = into[i].1.max(*clock),
            Err(i) => into.insert(i, (*thread, *clock)),
        },
        _ if into.is_empty() => into.extend_from_slice(from),
        _ if raise_in_place(into, from) => {}
        _ => {
            // One pass over both: a merge of two sorted lists.
            let mut merged = Vec::with_capacity(into.len() + from.len());
            let (mut a, mut b) = (into.iter().peekable(), from.iter().peekable());
            loop {
                match (a.peek(), b.peek()) {
                    (Some(&&(ta, ca)), Some(&&(tb, cb))) => {
                        if ta == tb {
                            merged.push((ta, ca.max(cb)));
                            a.next();
                            b.next();
                        } else if ta < tb {
                            merged.push((ta, ca));
                            a.next();
                        } else {
                            merged.push((tb, cb));
                            b.next();
                        }
                    }
                    (Some(&&x), None) => {
                        merged.push(x);
                        a.next();
                    }
                    (None, Some(&&y)) => {
                        merged.push(y);
                        b.next();
                    }
                    (None, None) => break,
                }
            }
            *into = merged;
        }
    }
}

/// What each thread knows of the others since the team last met whole.
#[derive(Default)]
struct Clocks {
    /// Whole-team meetings so far.
    epoch: u32,
    /// Each thread's interval between its partial meetings.
    own: Vec<u32>,
    /// Per thread, sorted by thread: the latest interval of each other thread ordered before
    /// its present.
    known: Vec<Vec<(u32, u32)>>,
}

impl Clocks {
    fn new(threads: u32) -> Self {
        Clocks {
            epoch: 0,
            own: vec![0; threads as usize],
            known: vec![Vec::new(); threads as usize],
        }
    }

    /// As `new`, keeping the allocations when the team has as many threads.
    fn reset(&mut self, threads: u32) {
        if self.own.len() != threads as usize {
            *self = Clocks::new(threads);
            return;
        }
        self.epoch = 0;
        self.own.fill(0);
        for k in &mut self.known {
            k.clear();
        }
    }

    fn next_epoch(&mut self) {
        self.epoch += 1;
        for k in &mut self.known {
            k.clear();
        }
    }

    /// Whether `earlier` happened before `me`'s present.
    fn ordered(&self, me: u32, earlier: &Access) -> bool {
        earlier.thread == me
            || earlier.epoch < self.epoch
            || self.known[me as usize]
                .binary_search_by_key(&earlier.thread, |&(t, _)| t)
                .is_ok_and(|i| self.known[me as usize][i].1 >= earlier.clock)
    }
}

#[derive(Default)]
struct Join {
    known: Vec<(u32, u32)>,
    pending: u32,
}

/// The site constant of an access (null without one).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Site(*const VgpuAccessSite);

impl Site {
    fn describe(self) -> String {
        if self.0.is_null() {
            return "?".into();
        }
        // SAFETY: the image's site constant.
        let s = unsafe { *self.0 };
        let function = c_text(s.function);
        if s.file.is_null() || s.line == 0 {
            format!("in {function}")
        } else {
            format!(
                "in {function} at {}:{}:{}",
                c_text(s.file),
                s.line,
                s.column
            )
        }
    }
}

/// `in f at file.c:12:5` for a site constant of the image (or null).
pub fn describe_site(site: *const VgpuAccessSite) -> String {
    Site(site).describe()
}

fn c_text(p: *const c_char) -> String {
    if p.is_null() {
        return "?".into();
    }
    // SAFETY: NUL-terminated strings of the image.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[derive(Clone, Copy)]
struct Access {
    thread: u32,
    clock: u32,
    epoch: u32,
    site: Site,
}

#[derive(Default)]
struct Word {
    write: Option<Access>,
    reads: Vec<Access>,
}

struct Object {
    start: usize,
    bytes: usize,
    /// NUL-terminated, the image's: read only for a report.
    name: *const c_char,
}

struct Checker {
    kernel: String,
    team: u32,
    static_begin: usize,
    static_len: usize,
    dynamic_begin: usize,
    dynamic_bytes: usize,
    /// Sorted by address.
    objects: Vec<Object>,
    /// The static section's words, then the launch's dynamic bytes'.
    words: Vec<Word>,
    /// The words this team touched, so the next team resets only those.
    touched: Vec<usize>,
    clocks: Clocks,
    joins: HashMap<Meeting, Join>,
    /// Locks and critical sections: what their releases ordered so far in this epoch.
    sync_objects: HashMap<usize, Vec<(u32, u32)>>,
    seen: HashSet<(Site, Site, u8)>,
    reports: Vec<String>,
    hazards: u64,
    out_of_bounds: u64,
    warn_only: bool,
}

impl Checker {
    /// Where the dynamic buffer's words begin in `words`, after the static section's.
    fn first_dynamic_word(&self) -> usize {
        self.static_len.div_ceil(4)
    }

    /// The offset of `address` in the dynamic shared buffer, if it lies there.
    fn dynamic_offset(&self, address: usize) -> Option<usize> {
        let offset = address.wrapping_sub(self.dynamic_begin);
        (offset < super::DYNAMIC_SHARED_BYTES).then_some(offset)
    }

    /// The object `address` lies in or after (the last one starting at or before it).
    fn object_at(&self, address: usize) -> Option<&Object> {
        let after = self.objects.partition_point(|o| o.start <= address);
        after.checked_sub(1).map(|i| &self.objects[i])
    }

    /// `address` as object and offset, for messages.
    fn place(&self, address: usize) -> String {
        if let Some(offset) = self.dynamic_offset(address) {
            return format!("dynamic shared memory + {offset}");
        }
        match self.object_at(address) {
            Some(o) => format!("`{}` + {}", c_text(o.name), address - o.start),
            None => format!("{address:#x}"),
        }
    }

    fn access(&mut self, address: usize, bytes: usize, write: bool, site: Site) {
        let me = team::thread();
        let bytes = bytes.max(1);
        let word_range = if let Some(offset) = self.dynamic_offset(address) {
            if offset + bytes > self.dynamic_bytes {
                let what = format!(
                    "a {bytes}-byte access at offset {offset} of dynamic shared memory, of which the launch has {} bytes",
                    self.dynamic_bytes
                );
                self.out_of_bounds(me, write, what, site);
                return;
            }
            let base = self.first_dynamic_word();
            base + offset / 4..base + (offset + bytes - 1) / 4 + 1
        } else {
            let object = self.object_at(address);
            if object.is_none_or(|o| address + bytes > o.start + o.bytes) {
                let what = match object {
                    Some(o) => format!(
                        "a {bytes}-byte access at offset {} of `{}`, which has {} bytes",
                        address - o.start,
                        c_text(o.name),
                        o.bytes
                    ),
                    None => format!("{bytes} bytes at {address:#x}, before every object"),
                };
                self.out_of_bounds(me, write, what, site);
                return;
            }
            let offset = address - self.static_begin;
            offset / 4..(offset + bytes - 1) / 4 + 1
        };
        let now = Access {
            thread: me,
            clock: self.clocks.own[me as usize],
            epoch: self.clocks.epoch,
            site,
        };
        for index in word_range {
            let Some(word) = self.words.get_mut(index) else {
                return;
            };
            if word.write.is_none() && word.reads.is_empty() {
                self.touched.push(index);
            }
            let mut found: Option<(Access, &'static str)> = None;
            if let Some(w) = word.write {
                if !self.clocks.ordered(me, &w) {
                    found = Some((
                        w,
                        if write {
                            "Write-after-Write"
                        } else {
                            "Read-after-Write"
                        },
                    ));
                }
            }
            if write {
                if found.is_none() {
                    if let Some(r) = word.reads.iter().find(|r| !self.clocks.ordered(me, r)) {
                        found = Some((*r, "Write-after-Read"));
                    }
                }
                word.write = Some(now);
                word.reads.clear();
            } else if let Some(mine) = word.reads.iter_mut().find(|r| r.thread == me) {
                *mine = now;
            } else {
                word.reads.push(now);
            }
            if let Some((other, hazard)) = found {
                let byte = if index >= self.first_dynamic_word() {
                    self.dynamic_begin + (index - self.first_dynamic_word()) * 4
                } else {
                    self.static_begin + index * 4
                };
                self.hazard(hazard, me, write, other, byte, site);
                // One finding per access.
                return;
            }
        }
    }

    fn hazard(
        &mut self,
        hazard: &str,
        me: u32,
        write: bool,
        other: Access,
        address: usize,
        site: Site,
    ) {
        self.hazards += 1;
        let kind = match hazard.as_bytes()[0] {
            b'W' if write => 0,
            b'R' => 1,
            _ => 2,
        };
        if self.reports.len() >= MAX_REPORTS || !self.seen.insert((other.site, site, kind)) {
            return;
        }
        let earlier = if hazard.ends_with("Read") {
            "read"
        } else {
            "wrote"
        };
        self.reports.push(format!(
            "kernel {}: racecheck: {hazard} hazard in team {} at {}: thread {me} {} it {}, thread {} {earlier} it {} with no barrier between them",
            self.kernel,
            self.team,
            self.place(address),
            if write { "writes" } else { "reads" },
            site.describe(),
            other.thread,
            other.site.describe()
        ));
    }

    fn out_of_bounds(&mut self, me: u32, write: bool, what: String, site: Site) {
        self.out_of_bounds += 1;
        if self.reports.len() >= MAX_REPORTS || !self.seen.insert((site, site, 3)) {
            return;
        }
        self.reports.push(format!(
            "kernel {}: out-of-bounds {} of team memory in team {} by thread {me}: {what}, {}",
            self.kernel,
            if write { "write" } else { "read" },
            self.team,
            site.describe()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::team::{run_team, team_barrier, warp_exchange, warp_sync};
    use rustomp_abi::{VgpuSharedObject, VGPU_CHECK_FAIL};

    #[test]
    fn a_merge_keeps_the_larger_clock_of_every_thread_in_place_or_not() {
        // Lists drawn from a small generator: every pair, against a map's merge.
        let mut seed = 7u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            seed >> 16
        };
        let lists: Vec<Vec<(u32, u32)>> = (0..40)
            .map(|_| {
                let mut l = Vec::new();
                for t in 0..8 {
                    if next() % 2 == 0 {
                        l.push((t, next() % 5));
                    }
                }
                l
            })
            .collect();
        let mut in_place = 0;
        for a in &lists {
            for b in &lists {
                let mut want: std::collections::BTreeMap<u32, u32> = a.iter().copied().collect();
                for &(t, c) in b {
                    let e = want.entry(t).or_insert(c);
                    *e = (*e).max(c);
                }
                let mut got = a.clone();
                if b.iter().all(|(t, _)| a.iter().any(|(u, _)| u == t)) && !b.is_empty() {
                    in_place += 1;
                }
                merge(&mut got, b);
                assert_eq!(got, want.into_iter().collect::<Vec<_>>(), "{a:?} + {b:?}");
            }
        }
        assert!(
            in_place > 40,
            "the in-place case was exercised {in_place} times"
        );
    }

    /// A stand-in for an image's team memory: one 64-byte object, then its redzone.
    #[repr(C, align(16))]
    struct Memory([u8; 96]);
    static mut MEMORY: Memory = Memory([0; 96]);

    fn base() -> usize {
        &raw const MEMORY as usize
    }

    /// Runs `threads` threads of `body` on one team under the check; the check's verdict.
    fn checked(threads: u32, body: impl Fn() + Clone + 'static) -> Result<(), String> {
        checked_teams(threads, &[Box::new(body)])
    }

    type Body = Box<dyn Fn()>;

    /// Runs one team per body, one after another, under one check.
    fn checked_teams(threads: u32, bodies: &[Body]) -> Result<(), String> {
        let objects = [VgpuSharedObject {
            address: base() as *const u8,
            bytes: 64,
            name: c"team_object".as_ptr(),
        }];
        let layout = VgpuSharedLayout {
            begin: base() as *const u8,
            end: (base() + 96) as *const u8,
            objects: objects.as_ptr(),
            objects_end: objects.as_ptr_range().end,
        };
        unsafe extern "C" fn unused(_: *mut core::ffi::c_void) {}
        let launch = VgpuLaunch {
            blocks: 1,
            threads,
            warp: 32,
            dynamic_shared_bytes: 0,
            stack_bytes: 64 << 10,
            watchdog_ms: 0,
            kernel_name: c"k".as_ptr(),
            thread_entry: unused,
            context: core::ptr::null_mut(),
            checks: VGPU_CHECK_FAIL,
            family: rustomp_abi::VGPU_FAMILY_NVPTX,
            shared_layout: &layout,
            grid: [1, 1, 1],
            block: [threads, 1, 1],
        };
        let dynamic = [0u8; 16];
        let check = Launch::begin(&launch, "k", dynamic.as_ptr(), 16).expect("checked");
        for (team, body) in bodies.iter().enumerate() {
            begin_team(team as u32, threads);
            let body: &'static dyn Fn() = unsafe_static(body.as_ref());
            run_team(
                team as u32,
                bodies.len() as u32,
                threads,
                32,
                crate::team::Family::Nvptx,
                64 << 10,
                body,
            )
            .expect("no deadlock");
        }
        check.end()
    }

    /// The bodies outlive every team (run_team returns after its threads ended).
    fn unsafe_static(body: &dyn Fn()) -> &'static dyn Fn() {
        // SAFETY: `checked_teams` keeps the bodies alive until every team has run.
        unsafe { std::mem::transmute::<&dyn Fn(), &'static dyn Fn()>(body) }
    }

    fn write(offset: usize) {
        // SAFETY: only the address is used.
        unsafe { __vgpu_shared_access((base() + offset) as *const u8, 4, 1, core::ptr::null()) }
    }
    fn read(offset: usize) {
        // SAFETY: as above.
        unsafe { __vgpu_shared_access((base() + offset) as *const u8, 4, 0, core::ptr::null()) }
    }

    #[test]
    fn a_write_and_a_read_of_two_threads_without_a_meeting_race() {
        let err = checked(64, || match team::thread() {
            5 => write(8),
            40 => read(8),
            _ => {}
        })
        .unwrap_err();
        assert!(err.contains("racecheck found 1 hazard(s)"), "{err}");
    }

    #[test]
    fn each_team_starts_with_team_memory_nobody_touched() {
        // Team 0 writes words that team 1 then reads and writes from other threads: teams have
        // their own team memory, so nothing of team 0 may be held against team 1 (only the
        // words a team touched are reset for the next one).
        let first: Body = Box::new(|| match team::thread() {
            5 => write(8),
            6 => read(12),
            _ => {}
        });
        let second: Body = Box::new(|| match team::thread() {
            40 => read(8),
            41 => write(12),
            _ => {}
        });
        checked_teams(64, &[first, second]).expect("no hazard across teams");
        // A race inside a later team is still found.
        let quiet: Body = Box::new(|| {
            if team::thread() == 1 {
                write(16)
            }
        });
        let racy: Body = Box::new(|| match team::thread() {
            5 => write(16),
            40 => read(16),
            _ => {}
        });
        let err = checked_teams(64, &[quiet, racy]).unwrap_err();
        assert!(err.contains("racecheck found 1 hazard(s)"), "{err}");
    }

    #[test]
    fn a_team_barrier_orders_them() {
        checked(64, || {
            if team::thread() == 5 {
                write(8);
            }
            team_barrier();
            if team::thread() == 40 {
                read(8);
            }
        })
        .unwrap();
    }

    #[test]
    fn a_warp_sync_orders_its_lanes_only_and_a_shuffle_orders_none() {
        checked(64, || {
            let me = team::thread();
            if me == 1 {
                write(0);
            }
            warp_sync(!0);
            if me == 2 {
                read(0);
            }
        })
        .unwrap();
        for (reader, exchange_only) in [(33, false), (2, true)] {
            let err = checked(64, move || {
                let me = team::thread();
                if me == 1 {
                    write(0);
                }
                if exchange_only {
                    let _ = warp_exchange(!0, me);
                } else {
                    warp_sync(!0);
                }
                if me == reader {
                    read(0);
                }
            })
            .unwrap_err();
            assert!(err.contains("1 hazard"), "{err}");
        }
    }

    #[test]
    fn a_lock_released_and_acquired_orders_its_holders() {
        let lock = 0x1000 as *const u8;
        checked(64, move || {
            // SAFETY: only the addresses are used.
            unsafe {
                __vgpu_ptx_note_lock_acquired(lock);
                read(4);
                write(4);
                __vgpu_ptx_note_lock_released(lock);
            }
        })
        .unwrap();
    }

    #[test]
    fn clocks_merge_as_sorted_lists() {
        let mut into = vec![(1, 5), (4, 2), (9, 1)];
        merge(&mut into, &[(0, 1), (4, 7), (5, 3), (9, 0), (12, 2)]);
        assert_eq!(into, vec![(0, 1), (1, 5), (4, 7), (5, 3), (9, 1), (12, 2)]);
        merge(&mut into, &[(3, 3)]);
        assert_eq!(into[2], (3, 3));
    }

    #[test]
    fn an_access_into_the_redzone_is_out_of_bounds() {
        let err = checked(32, || {
            if team::thread() == 3 {
                write(64);
            }
        })
        .unwrap_err();
        assert!(err.contains("1 out-of-bounds"), "{err}");
    }
}
