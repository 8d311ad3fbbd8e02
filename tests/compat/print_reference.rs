//! The text printer against the reference printer's own output, on traces
//! written by the reference recorder; and on a trace nested deeper than any
//! recursive printer could go.

use std::io::{self, Write};

use tracetree::common::{ClassId, CodeLocationId, EventId, MethodId, StringId, ThreadId};
use tracetree::lowlevel::Object;
use tracetree::model::{
    ClassDescriptor, CodeLocation, CodeLocationKind, DiffStatus, Footer, JavaStr, MethodDescriptor,
    StringObject, Tracepoint, TracepointBody, TracepointHeader, TracepointType, Type, Value,
};
use tracetree::print::PrintOptions;
use tracetree::read::EagerTrace;
use tracetree::storage::TraceBytes;
use tracetree_testkit::layout::{DATA_MAGIC, file_header};

use tracetree_testkit::compare::first_difference;
use tracetree_testkit::files;
use tracetree_testkit::stack::on_small_stack;

fn print(trace: &EagerTrace, options: &PrintOptions) -> Vec<u8> {
    let mut out = Vec::new();
    options.print(trace, &mut out).unwrap();
    out
}

#[test]
fn reference_traces_print_byte_for_byte_verbose_and_brief() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let mut checked = 0;
    for name in files::COMPLETE_REFERENCE_TRACES {
        let trace_path = dir.join(format!("{name}.trace"));
        let verbose_path = dir.join(format!("{name}.trace.txt"));
        let brief_path = dir.join(format!("{name}.trace.brief.txt"));
        if !(trace_path.exists() && verbose_path.exists() && brief_path.exists()) {
            continue;
        }
        let trace = EagerTrace::open(&trace_path).unwrap();
        for (verbose, expected) in [(true, &verbose_path), (false, &brief_path)] {
            let mut options = PrintOptions::default();
            options.verbose = verbose;
            let ours = print(&trace, &options);
            let expected = std::fs::read(expected).unwrap();
            assert!(
                ours == expected,
                "{name} (verbose: {verbose}): {}",
                first_difference(&ours, &expected)
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 10, "every reference text was checked");
}

#[test]
fn crashed_trace_prints_unfinished_calls_as_such() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let trace = EagerTrace::open(dir.join("crashed.trace")).unwrap();
    let mut options = PrintOptions::default();
    options.verbose = true;
    let text = String::from_utf8(print(&trace, &options)).unwrap();

    // Calls whose result really is the `<unfinished method>` marker.
    let recorded = trace
        .nodes()
        .filter(|node| {
            matches!(
                &node.footer(),
                Some(Footer::MethodCall { result: Value::String(s), exception })
                    if exception.is_empty() && s.as_bytes() == b"<unfinished method>"
            )
        })
        .count();
    let unfinished_calls = trace
        .nodes()
        .filter(|n| {
            n.is_unfinished() && n.tracepoint().tracepoint_type() == TracepointType::MethodCall
        })
        .count();
    assert_eq!(unfinished_calls, trace.report().unfinished_containers);
    let lines = text
        .lines()
        .filter(|l| l.contains(": <unfinished method>"))
        .count();
    assert_eq!(lines, trace.report().unfinished_containers + recorded);
    assert_eq!(trace.report().unfinished_containers, 15);

    // No names were written: the headers show empty parentheses.
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("# ")).collect();
    assert_eq!(headers, ["# Thread 1 ()", "# Thread 2 ()", "# Thread 3 ()"]);
    assert_eq!(text.lines().count(), trace.nodes().len() + headers.len());
    assert!(text.contains("\nThread@1672489102.run(): <unfinished method> at :0\n"));
    assert!(text.contains(
        "\n          node.leaf(tmp ➜ \"tmp-18\"): <unfinished method> at Worker.kt:102\n"
    ));
}

#[test]
fn a_depth_limit_keeps_the_lines_above_it() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let trace = EagerTrace::open(dir.join("small-stream.trace")).unwrap();
    let full = String::from_utf8(print(&trace, &PrintOptions::default())).unwrap();
    let mut options = PrintOptions::default();
    options.max_depth = Some(2);
    let limited = String::from_utf8(print(&trace, &options)).unwrap();
    let depth = |line: &str| (line.len() - line.trim_start_matches(' ').len()) / 2;
    // Without the fold lines, the limited text is the full text cut at depth 2.
    let kept: Vec<&str> = full
        .lines()
        .filter(|l| l.starts_with('#') || depth(l) <= 2)
        .collect();
    let unfolded: Vec<&str> = limited
        .lines()
        .filter(|l| !l.trim_start().starts_with("... <"))
        .collect();
    assert_eq!(unfolded, kept);
    // Every fold line sits at depth 3, right under a line at depth 2.
    let lines: Vec<&str> = limited.lines().collect();
    let folds = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("... <"))
        .map(|(i, l)| {
            assert_eq!(depth(l), 3, "{l}");
            assert_eq!(depth(lines[i - 1]), 2, "{}", lines[i - 1]);
        })
        .count();
    assert!(folds > 0);
}

#[test]
fn printing_corrupted_traces_never_panics() {
    let Some(dir) = files::reference_traces() else {
        return;
    };
    let original = std::fs::read(dir.join("all-types-stream.trace")).unwrap();
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut printed = 0;
    for _ in 0..2_000 {
        let mut bytes = original.clone();
        for _ in 0..1 + next() % 4 {
            let at = 16 + (next() as usize) % (bytes.len() - 16);
            bytes[at] = next() as u8;
        }
        // Loading may fail with an error; printing what loads must not panic.
        if let Ok(trace) = EagerTrace::load(TraceBytes::from_vec(bytes)) {
            for verbose in [false, true] {
                let mut options = PrintOptions::default();
                options.verbose = verbose;
                let _ = options.print(&trace, &mut io::sink());
            }
            printed += 1;
        }
    }
    println!("{printed} of 2000 corrupted traces loaded and printed");
    assert!(printed > 0);
}

// ---- a trace 200,000 calls deep ----

const DEPTH: usize = 200_000;

/// One thread, `Deep.m()` calling itself `DEPTH - 1` times, encoded with the
/// format's own codecs.
fn deep_trace() -> EagerTrace {
    let mut bytes = file_header(DATA_MAGIC).to_vec();
    let mut put = |object: Object<'_>| object.encode(&mut bytes).unwrap();
    put(Object::BlockStart(ThreadId::new(0)));
    put(Object::ClassDescriptor(ClassDescriptor {
        id: ClassId::new(0),
        name: JavaStr::new("deep.Deep"),
    }));
    put(Object::MethodDescriptor(MethodDescriptor {
        id: MethodId::new(0),
        class: ClassId::new(0),
        name: JavaStr::new("m"),
        return_type: Type::Void,
        parameter_types: Vec::new(),
    }));
    put(Object::String(StringObject {
        id: StringId::new(0),
        value: JavaStr::new("Deep.kt"),
    }));
    put(Object::CodeLocation(CodeLocation {
        kind: CodeLocationKind::MethodCall,
        id: CodeLocationId::new(0),
        file_name: StringId::new(0),
        class_name: StringId::new(-1),
        method_name: StringId::new(-1),
        line: 7,
        access_path: None,
        argument_paths: Vec::new(),
        locals: Vec::new(),
    }));
    for event in 0..DEPTH {
        put(Object::Tracepoint(Tracepoint {
            header: TracepointHeader {
                tracepoint_type: TracepointType::MethodCall,
                code_location: CodeLocationId::new(0),
                thread: ThreadId::new(0),
                event: EventId::new(event as i32),
                diff_status: DiffStatus::None,
            },
            child_diff_statuses: Vec::new(),
            body: TracepointBody::MethodCall {
                method: MethodId::new(0),
                receiver: Value::Null,
                arguments: Vec::new(),
                flags: 0,
            },
        }));
    }
    for _ in 0..DEPTH {
        put(Object::Footer(Footer::MethodCall {
            result: Value::Void,
            exception: JavaStr::new(""),
        }));
    }
    put(Object::BlockEnd);
    put(Object::Eof);
    EagerTrace::load(TraceBytes::from_vec(bytes)).unwrap()
}

/// Counts bytes and keeps the last few (the deep print is 40 GB).
#[derive(Default)]
struct Tail {
    bytes: u64,
    tail: Vec<u8>,
}

const TAIL: usize = 128;

impl Write for Tail {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.bytes += buf.len() as u64;
        if buf.len() >= TAIL {
            self.tail.clear();
            self.tail.extend_from_slice(&buf[buf.len() - TAIL..]);
        } else {
            self.tail.extend_from_slice(buf);
            let excess = self.tail.len().saturating_sub(TAIL);
            self.tail.drain(..excess);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_trace_200_000_calls_deep_prints_in_constant_stack() {
    let (bytes, tail) = on_small_stack(|| {
        let trace = deep_trace();
        assert_eq!(trace.nodes().len(), DEPTH);
        let mut out = Tail::default();
        let mut options = PrintOptions::default();
        options.verbose = true;
        options.print(&trace, &mut out).unwrap();
        (out.bytes, out.tail)
    });
    // `# Thread 1`, `Deep.m() at Deep.kt:7` at depth 0 (a static call from
    // the top), then `m() at Deep.kt:7` at depths 1.. (calls from `Deep.m`).
    let n = DEPTH as u64;
    let header = "# Thread 1\n".len() as u64;
    let root = "Deep.m() at Deep.kt:7\n".len() as u64;
    let line = "m() at Deep.kt:7\n".len() as u64;
    let indentation = n * (n - 1); // 2 spaces × (1 + 2 + … + n-1)
    assert_eq!(bytes, header + root + (n - 1) * line + indentation);
    // The last line: 399,998 spaces, then the call.
    let mut last = vec![b' '; TAIL - "m() at Deep.kt:7\n".len()];
    last.extend_from_slice(b"m() at Deep.kt:7\n");
    assert_eq!(tail, last);
}

#[test]
fn a_deep_trace_folds_below_the_depth_limit() {
    let text = on_small_stack(|| {
        let trace = deep_trace();
        let mut options = PrintOptions::default();
        options.max_depth = Some(2);
        print(&trace, &options)
    });
    assert_eq!(
        String::from_utf8(text).unwrap(),
        "# Thread 1\nDeep.m()\n  m()\n    m()\n      ... <unloaded child>\n"
    );
}
