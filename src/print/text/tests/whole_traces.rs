//! Whole traces (§1 and §4): thread headers, indentation, depth limits and
//! thread filters, printed from a tree held in memory.

use super::*;

// ---- §1 and §4: whole traces ----

/// A trace in memory: nodes by index, roots by thread.
struct MemoryTree {
    context: TraceContext,
    nodes: Vec<(Tracepoint<'static>, Option<Footer<'static>>, Vec<usize>)>,
    roots: BTreeMap<ThreadId, Vec<usize>>,
}

impl MemoryTree {
    fn new(fixture: &Fixture) -> Self {
        MemoryTree {
            context: fixture.context(),
            nodes: Vec::new(),
            roots: BTreeMap::new(),
        }
    }

    fn add(
        &mut self,
        parent: Option<usize>,
        thread: i32,
        mut tracepoint: Tracepoint<'static>,
        footer: Option<Footer<'static>>,
    ) -> usize {
        tracepoint.header.thread = ThreadId(thread);
        let id = self.nodes.len();
        self.nodes.push((tracepoint, footer, Vec::new()));
        match parent {
            Some(parent) => self.nodes[parent].2.push(id),
            None => self.roots.entry(ThreadId(thread)).or_default().push(id),
        }
        id
    }

    fn print(&self, options: &PrintOptions) -> Result<String> {
        let mut out = Vec::new();
        print_trace(self, options, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }
}

impl TraceTree for MemoryTree {
    type Node = usize;

    fn context(&self) -> &TraceContext {
        &self.context
    }

    fn thread_ids(&self) -> Vec<ThreadId> {
        self.roots.keys().copied().collect()
    }

    fn roots(&self, thread: ThreadId) -> Result<Vec<usize>> {
        Ok(self.roots.get(&thread).cloned().unwrap_or_default())
    }

    fn visit<R>(
        &self,
        node: usize,
        f: impl FnOnce(&Tracepoint<'_>, Option<&Footer<'_>>) -> R,
    ) -> Result<R> {
        let (tracepoint, footer, _) = &self.nodes[node];
        Ok(f(tracepoint, footer.as_ref()))
    }

    fn child_count(&self, node: usize) -> Result<usize> {
        Ok(self.nodes[node].2.len())
    }

    fn children(&self, node: usize) -> Result<Vec<usize>> {
        Ok(self.nodes[node].2.clone())
    }
}

/// Two threads: `main()` calling `Account.values()`, which calls `check()`
/// twice around a loop; and `run()` with a local write.
fn two_threads(named: bool) -> MemoryTree {
    let mut fx = Fixture::default();
    let main = fx.method("lincheckdriver.RefKt", "main");
    let values = fx.method("lincheckdriver.Account", "values");
    let check = fx.method("lincheckdriver.Account", "check");
    let run = fx.method("lincheckdriver.RefKt", "run");
    let k = fx.variable("k");
    let at = fx.access_site(None);
    if named {
        fx.thread_name(0, "main");
        fx.thread_name(1, "Поток-β 🧵");
    }
    let mut tree = MemoryTree::new(&fx);
    let root = tree.add(
        None,
        0,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    let v = tree.add(
        Some(root),
        0,
        call(NO_LOCATION, values, Value::Null, vec![]),
        Some(void()),
    );
    tree.add(
        Some(v),
        0,
        call(NO_LOCATION, check, Value::Null, vec![]),
        Some(void()),
    );
    let l = tree.add(
        Some(v),
        0,
        tracepoint(at, TracepointBody::Loop { loop_id: 0 }),
        Some(Footer::Loop { iterations: 1 }),
    );
    let i = tree.add(
        Some(l),
        0,
        tracepoint(
            at,
            TracepointBody::LoopIteration {
                loop_id: 0,
                iteration: 0,
            },
        ),
        Some(Footer::LoopIteration),
    );
    tree.add(
        Some(i),
        0,
        call(NO_LOCATION, check, Value::Null, vec![]),
        Some(void()),
    );
    tree.add(
        Some(i),
        0,
        tracepoint(
            at,
            TracepointBody::WriteLocal {
                variable: k,
                value: Value::Int(1),
            },
        ),
        None,
    );
    tree.add(
        Some(v),
        0,
        call(NO_LOCATION, check, Value::Null, vec![]),
        Some(void()),
    );
    let r = tree.add(None, 1, call(NO_LOCATION, run, Value::Null, vec![]), None);
    tree.add(
        Some(r),
        1,
        tracepoint(
            at,
            TracepointBody::WriteLocal {
                variable: k,
                value: Value::Int(2),
            },
        ),
        None,
    );
    tree
}

#[test]
fn threads_print_in_order_with_names_and_two_spaces_per_level() {
    let text = two_threads(true)
        .print(&PrintOptions {
            verbose: true,
            ..PrintOptions::default()
        })
        .unwrap();
    assert_eq!(
        text,
        "# Thread 1 (main)\n\
         main() at :0\n\
         \x20 Account.values() at :0\n\
         \x20   check() at :0\n\
         \x20   loop(1 iterations) at Account.kt:30\n\
         \x20     <iteration 1> at Account.kt:30\n\
         \x20       Account.check() at :0\n\
         \x20       k = 1 at Account.kt:30\n\
         \x20   check() at :0\n\
         # Thread 2 (Поток-β 🧵)\n\
         run(): <unfinished method> at :0\n\
         \x20 k = 2 at Account.kt:30\n"
    );
}

#[test]
fn threads_without_names_print_empty_parentheses() {
    let text = two_threads(false).print(&PrintOptions::default()).unwrap();
    assert!(text.starts_with("# Thread 1 ()\nmain()\n"), "{text}");
    assert!(
        text.contains("\n# Thread 2 ()\nrun(): <unfinished method>\n"),
        "{text}"
    );
}

#[test]
fn a_single_root_prints_no_name() {
    let mut fx = Fixture::default();
    let main = fx.method("lincheckdriver.RefKt", "main");
    fx.thread_name(0, "main");
    let mut tree = MemoryTree::new(&fx);
    tree.add(
        None,
        0,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    assert_eq!(
        tree.print(&PrintOptions::default()).unwrap(),
        "# Thread 1\nmain()\n"
    );
}

#[test]
fn the_thread_number_is_the_root_thread_id_plus_one() {
    let mut fx = Fixture::default();
    let main = fx.method("lincheckdriver.RefKt", "main");
    fx.thread_name(6, "seventh");
    let mut tree = MemoryTree::new(&fx);
    tree.add(
        None,
        6,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    tree.add(
        None,
        6,
        call(NO_LOCATION, main, Value::Null, vec![]),
        Some(void()),
    );
    assert_eq!(
        tree.print(&PrintOptions::default()).unwrap(),
        "# Thread 7 (seventh)\nmain()\n# Thread 7 (seventh)\nmain()\n"
    );
}

#[test]
fn a_depth_limit_folds_deeper_children_into_one_line_per_parent() {
    let tree = two_threads(true);
    let options = PrintOptions {
        verbose: true,
        max_depth: Some(1),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        "# Thread 1 (main)\n\
         main() at :0\n\
         \x20 Account.values() at :0\n\
         \x20   ... <3 unloaded children>\n\
         # Thread 2 (Поток-β 🧵)\n\
         run(): <unfinished method> at :0\n\
         \x20 k = 2 at Account.kt:30\n"
    );
    let options = PrintOptions {
        max_depth: Some(0),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        "# Thread 1 (main)\n\
         main()\n\
         \x20 ... <unloaded child>\n\
         # Thread 2 (Поток-β 🧵)\n\
         run(): <unfinished method>\n\
         \x20 ... <unloaded child>\n"
    );
    let options = PrintOptions {
        max_depth: Some(3),
        ..PrintOptions::default()
    };
    let text = tree.print(&options).unwrap();
    assert!(
        text.contains("      <iteration 1>\n        ... <2 unloaded children>\n    check()\n"),
        "{text}"
    );
}

#[test]
fn a_thread_filter_prints_part_of_the_full_text() {
    let tree = two_threads(true);
    let options = PrintOptions {
        threads: Some(vec![ThreadId(1)]),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        "# Thread 2 (Поток-β 🧵)\nrun(): <unfinished method>\n  k = 2\n"
    );
    let options = PrintOptions {
        threads: Some(vec![ThreadId(1), ThreadId(0), ThreadId(1)]),
        ..PrintOptions::default()
    };
    assert_eq!(
        tree.print(&options).unwrap(),
        tree.print(&PrintOptions::default()).unwrap()
    );
}

#[test]
fn a_thread_filter_naming_an_absent_thread_is_a_usage_error() {
    let options = PrintOptions {
        threads: Some(vec![ThreadId(5)]),
        ..PrintOptions::default()
    };
    let error = two_threads(true).print(&options).unwrap_err();
    assert!(
        matches!(&error, Error::InvalidArgument { argument: "thread", problem } if problem.contains("no thread 5")),
        "{error}"
    );
}
