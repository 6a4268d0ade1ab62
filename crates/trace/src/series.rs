//! The per-window time series: `timeseries.parquet` of the trace.

/// Identifies one column of the time series: a metric of a server or of one of its
/// resources (`resource` empty for the server itself).
#[derive(Debug, Clone)]
pub struct SeriesMeta {
    pub tier: String,
    pub server: u32,
    pub resource: String,
    pub metric: &'static str,
}

/// Windows × series, row-major.
#[derive(Default)]
pub struct TimeSeries {
    pub meta: Vec<SeriesMeta>,
    pub window_start: Vec<f64>,
    pub values: Vec<f64>,
}

/// Values reserved up front at most (64 MiB): a longer run's series grows as it fills,
/// and a run that may be stopped early does not take its whole horizon at once.
const MAX_RESERVED: usize = 1 << 23;

impl TimeSeries {
    /// Room for `windows` rows of `meta`'s columns, when the run's horizon tells how many
    /// it will write. The values are the one buffer that grows with the run (12 MB for a
    /// million M/M/8 customers in 1-second windows); backed by 4 KiB pages, its first
    /// touches made most of that run's 5% of wall clock in the kernel, so the kernel is
    /// asked for huge pages where it grants them on request (Linux's transparent huge
    /// pages in `madvise` mode): page faults fall from about 3,200 to 900, the kernel's
    /// share to about 2.5% (`benchmarks/README.md`). Populating the pages in one call
    /// instead (`MADV_POPULATE_WRITE`) left 2.8–3.8%.
    pub fn with_room(meta: Vec<SeriesMeta>, windows: usize) -> Self {
        let values = Vec::with_capacity(windows.saturating_mul(meta.len()).min(MAX_RESERVED));
        advise_huge_pages(&values);
        TimeSeries {
            window_start: Vec::with_capacity(windows.min(MAX_RESERVED)),
            meta,
            values,
        }
    }
}

/// Advice only: ignored where the kernel has no transparent huge pages or refuses.
#[cfg(target_os = "linux")]
fn advise_huge_pages(v: &Vec<f64>) {
    // SAFETY: sysconf reads a constant. madvise is given whole pages inside `v`'s own
    // allocation, and MADV_HUGEPAGE changes how the kernel backs them, never their
    // contents (none yet: nothing is written before this call).
    unsafe {
        let page = libc::sysconf(libc::_SC_PAGESIZE).max(1) as usize;
        let start = v.as_ptr() as usize;
        let (lo, hi) = (
            start.next_multiple_of(page),
            (start + v.capacity() * size_of::<f64>()) / page * page,
        );
        if hi > lo {
            libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_: &Vec<f64>) {}
