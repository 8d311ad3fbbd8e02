//! Synthetic traces of a chosen shape, deterministic for a seed, recorded
//! through any [`ThreadRecorder`]: the source of the benchmarks' multi-GB
//! traces and of `tracetree gen`.
//!
//! Shapes:
//! - [`Shape::Mixed`]: like a recorded program: calls with arguments and
//!   results, field and local reads and writes, array writes, loops with
//!   iterations, objects and strings; moderate depth and fan-out.
//! - [`Shape::Wide`]: one call with as many direct children as the size allows.
//! - [`Shape::Deep`]: recursion [`DEEP_RECURSION`] calls deep, repeated.
//! - [`Shape::Threads`]: the mixed shape, meant for many threads and small blocks.

use std::fmt;
use std::str::FromStr;

use crate::error::Result;
use crate::model::{LocalKind, Type};
use crate::write::{
    AccessPathSpec, CallOutcome, CallSpec, CodeLocationSpec, FieldSpec, MethodSpec, ThreadRecorder,
    ValueSpec, VariableSpec, class_type,
};

/// How deep [`Shape::Deep`] recurses before unwinding.
pub const DEEP_RECURSION: usize = 200_000;

/// The shape of a generated trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A realistic mix of tracepoints.
    Mixed,
    /// One call with a huge number of direct children.
    Wide,
    /// Very deep recursion.
    Deep,
    /// The mixed shape for many interleaved threads.
    Threads,
}

impl FromStr for Shape {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        Ok(match s {
            "mixed" => Shape::Mixed,
            "wide" => Shape::Wide,
            "deep" => Shape::Deep,
            "threads" => Shape::Threads,
            other => {
                return Err(format!(
                    "unknown shape {other:?} (mixed, wide, deep, threads)"
                ));
            }
        })
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Shape::Mixed => "mixed",
            Shape::Wide => "wide",
            Shape::Deep => "deep",
            Shape::Threads => "threads",
        })
    }
}

/// Parses a size such as `100MB`, `1.5GB`, `4096` (bytes; units KB, MB, GB,
/// TB are powers of 1024).
pub fn parse_size(text: &str) -> std::result::Result<u64, String> {
    let upper = text.trim().to_ascii_uppercase();
    let split = upper
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(upper.len());
    let (number, unit) = upper.split_at(split);
    let number: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("not a size: {text:?} (try 100MB or 10GB)"))?;
    let unit: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        other => return Err(format!("unknown size unit {other:?} in {text:?}")),
    };
    if !(number >= 0.0 && number.is_finite()) {
        return Err(format!("not a size: {text:?}"));
    }
    Ok((number * unit as f64) as u64)
}

/// SplitMix64: a small generator whose output is fixed for a seed forever
/// (a library RNG may change its stream between versions, and generated
/// traces must stay identical for a seed).
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent / 100`.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

const ITEM: &str = "bench.Item";
const WORKER: &str = "bench.Worker";
const WORKER_KT: &str = "bench.WorkerKt";

/// The classes, methods, fields, variables and code locations a generated
/// program uses, built once.
struct Vocabulary {
    run: MethodSpec<'static>,
    process: MethodSpec<'static>,
    compute: MethodSpec<'static>,
    fill: MethodSpec<'static>,
    recurse: MethodSpec<'static>,
    value_field: FieldSpec<'static>,
    count_field: FieldSpec<'static>,
    name_field: FieldSpec<'static>,
    i: VariableSpec<'static>,
    sum: VariableSpec<'static>,
    call_site: CodeLocationSpec<'static>,
    field_site: CodeLocationSpec<'static>,
    static_site: CodeLocationSpec<'static>,
    local_site: CodeLocationSpec<'static>,
    array_site: CodeLocationSpec<'static>,
    loop_site: CodeLocationSpec<'static>,
}

impl Vocabulary {
    fn new() -> Self {
        let item = class_type(ITEM);
        let int_array = crate::write::array_type(Type::Int);
        let value_field = FieldSpec::new(ITEM, "value", Type::Int);
        let count_field = FieldSpec::new(WORKER, "count", Type::Long).with_static(true);
        let name_field = FieldSpec::new(ITEM, "name", class_type("java.lang.String"));
        let i = VariableSpec::new("i", Type::Int);
        let sum = VariableSpec::new("sum", Type::Long);
        let items = VariableSpec::new("items", int_array);
        let access = |line| {
            CodeLocationSpec::access("Worker.kt", WORKER, "process", line)
                .with_local("this", LocalKind::This)
                .with_local("i", LocalKind::Variable)
        };
        Vocabulary {
            run: MethodSpec::new("java.lang.Thread", "run", vec![], Type::Void),
            process: MethodSpec::new(WORKER, "process", vec![item.clone(), Type::Int], Type::Long),
            compute: MethodSpec::new(WORKER_KT, "compute", vec![Type::Int], Type::Int),
            fill: MethodSpec::new(WORKER, "fill", vec![], Type::Void),
            recurse: MethodSpec::new(WORKER_KT, "recurse", vec![Type::Int], Type::Int),
            call_site: CodeLocationSpec::call("Worker.kt", WORKER, "process", 12)
                .with_argument(Some(AccessPathSpec::local(i.clone()))),
            field_site: access(20)
                .with_access_path(AccessPathSpec::local(VariableSpec::new("item", item))),
            // A static field has no owner: no access path.
            static_site: access(21),
            local_site: access(22),
            array_site: access(23).with_access_path(AccessPathSpec::local(items)),
            loop_site: access(24),
            value_field,
            count_field,
            name_field,
            i,
            sum,
        }
    }
}

/// Records one thread of a generated trace.
pub struct ThreadGenerator {
    shape: Shape,
    rng: SplitMix64,
    words: Vocabulary,
    steps: u64,
}

/// Steps between two checks of the caller's stop condition.
const STOP_CHECK_INTERVAL: u64 = 256;

impl ThreadGenerator {
    /// A generator for thread number `thread` of a trace of `shape` seeded by `seed`.
    pub fn new(shape: Shape, seed: u64, thread: u64) -> Self {
        ThreadGenerator {
            shape,
            rng: SplitMix64(seed ^ thread.wrapping_mul(0xD1B5_4A32_D192_ED03)),
            words: Vocabulary::new(),
            steps: 0,
        }
    }

    /// Records a root call and its subtree into `recorder` until `stop`
    /// (asked every few hundred tracepoints) says enough, then closes every
    /// open container.
    pub fn run(
        &mut self,
        recorder: &mut impl ThreadRecorder,
        mut stop: impl FnMut() -> bool,
    ) -> Result<()> {
        let thread_object = ValueSpec::object("java.lang.Thread", (self.rng.next() >> 33) as i32);
        let run = self.words.run.clone();
        recorder.enter_call(None, CallSpec::new(&run).on(thread_object))?;
        let mut stopped = || {
            self.steps += 1;
            self.steps.is_multiple_of(STOP_CHECK_INTERVAL) && stop()
        };
        match self.shape {
            Shape::Mixed | Shape::Threads => {
                mixed(recorder, &self.words, &mut self.rng, &mut stopped)?
            }
            Shape::Wide => wide(recorder, &self.words, &mut self.rng, &mut stopped)?,
            Shape::Deep => deep(recorder, &self.words, &mut stopped)?,
        }
        recorder.exit_call(CallOutcome::VOID)
    }
}

fn item(rng: &mut SplitMix64) -> ValueSpec<'static> {
    ValueSpec::object(ITEM, (rng.next() >> 33) as i32)
}

fn mixed(
    recorder: &mut impl ThreadRecorder,
    words: &Vocabulary,
    rng: &mut SplitMix64,
    stopped: &mut impl FnMut() -> bool,
) -> Result<()> {
    const MAX_DEPTH: usize = 12;
    let base = recorder.depth();
    while !stopped() {
        let depth = recorder.depth() - base;
        match rng.below(100) {
            0..=17 if depth < MAX_DEPTH => {
                let n = rng.below(1000) as i32;
                let call = if rng.chance(50) {
                    CallSpec::new(&words.process)
                        .on(ValueSpec::object(WORKER, 7))
                        .with_argument(item(rng))
                        .with_argument(n)
                } else {
                    CallSpec::new(&words.compute).with_argument(n)
                };
                recorder.enter_call(Some(&words.call_site), call)?;
            }
            18..=35 if depth > 0 => {
                let outcome = match rng.below(10) {
                    0 => CallOutcome::returned(ValueSpec::string(format!(
                        "item-{}",
                        rng.below(10_000)
                    ))),
                    1 => CallOutcome::returned(item(rng)),
                    _ => CallOutcome::returned(ValueSpec::Long(rng.below(1 << 40) as i64)),
                };
                recorder.exit_call(outcome)?;
            }
            36..=38 => {
                let loop_id = rng.below(8) as i32;
                recorder.enter_loop(Some(&words.loop_site), loop_id)?;
                let iterations = rng.below(4) as i32;
                for i in 0..iterations {
                    recorder.enter_iteration()?;
                    recorder.write_local(Some(&words.local_site), &words.i, ValueSpec::Int(i))?;
                    recorder.write_local(
                        Some(&words.local_site),
                        &words.sum,
                        ValueSpec::Long(rng.below(1 << 20) as i64),
                    )?;
                    recorder.exit_iteration()?;
                }
                recorder.exit_loop(iterations)?;
            }
            39..=58 => {
                let value = rng.below(1 << 16) as i32;
                recorder.write_field(
                    Some(&words.field_site),
                    &words.value_field,
                    item(rng),
                    value.into(),
                )?;
            }
            59..=64 => {
                let name = ValueSpec::string(format!("name-{}", rng.below(100_000)));
                recorder.write_field(
                    Some(&words.field_site),
                    &words.name_field,
                    item(rng),
                    name,
                )?;
            }
            65..=71 => {
                let value = rng.below(1 << 16) as i32;
                recorder.read_field(
                    Some(&words.field_site),
                    &words.value_field,
                    item(rng),
                    value.into(),
                )?;
            }
            72..=75 => {
                let count = ValueSpec::Long(rng.below(1 << 30) as i64);
                recorder.write_field(
                    Some(&words.static_site),
                    &words.count_field,
                    ValueSpec::Null,
                    count,
                )?;
            }
            76..=87 => {
                let value = ValueSpec::Int(rng.below(1 << 10) as i32);
                recorder.write_local(Some(&words.local_site), &words.i, value)?;
            }
            88..=93 => {
                let value = ValueSpec::Long(rng.below(1 << 30) as i64);
                recorder.read_local(Some(&words.local_site), &words.sum, value)?;
            }
            _ => {
                let array = ValueSpec::array("[I", 91, 16);
                let index = rng.below(16) as i32;
                let value = ValueSpec::Int(rng.below(1 << 10) as i32);
                recorder.write_array(Some(&words.array_site), array, index, value)?;
            }
        }
    }
    while recorder.depth() > base {
        recorder.exit_call(CallOutcome::returned(0))?;
    }
    Ok(())
}

fn wide(
    recorder: &mut impl ThreadRecorder,
    words: &Vocabulary,
    rng: &mut SplitMix64,
    stopped: &mut impl FnMut() -> bool,
) -> Result<()> {
    recorder.enter_call(
        Some(&words.call_site),
        CallSpec::new(&words.fill).on(ValueSpec::object(WORKER, 7)),
    )?;
    let mut i = 0i32;
    while !stopped() {
        recorder.write_local(Some(&words.local_site), &words.i, ValueSpec::Int(i))?;
        if rng.chance(10) {
            recorder.write_field(
                Some(&words.field_site),
                &words.value_field,
                item(rng),
                i.into(),
            )?;
        }
        i = i.wrapping_add(1);
    }
    recorder.exit_call(CallOutcome::VOID)
}

fn deep(
    recorder: &mut impl ThreadRecorder,
    words: &Vocabulary,
    stopped: &mut impl FnMut() -> bool,
) -> Result<()> {
    let base = recorder.depth();
    'outer: loop {
        for n in 0..DEEP_RECURSION {
            let call = CallSpec::new(&words.recurse).with_argument(n as i32);
            recorder.enter_call(Some(&words.call_site), call)?;
            recorder.write_local(Some(&words.local_site), &words.i, ValueSpec::Int(n as i32))?;
            if stopped() {
                break 'outer;
            }
        }
        while recorder.depth() > base {
            recorder.exit_call(CallOutcome::returned(1))?;
        }
    }
    while recorder.depth() > base {
        recorder.exit_call(CallOutcome::returned(1))?;
    }
    Ok(())
}
