//! The exports read by parsers that are not ours: folded stacks by
//! inferno's flame graph writer, speedscope files against the schema
//! speedscope publishes (Python's `jsonschema`, the schema from the
//! `speedscope` npm package), Perfetto traces decoded by the official
//! `perfetto_trace.proto` (the `perfetto` Python package's generated
//! module). `.ci/run` installs the Python and npm packages; without them
//! those tests fail, or say SKIPPED with `TRACETREE_ALLOW_SKIP=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

use super::{expected, export, traces};
use tracetree::export::stacks::StackFormat;
use tracetree_testkit::skip;

#[test]
fn inferno_draws_the_folded_stacks() {
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let expected = expected(&trace, None);
        let (out, _) = export(&trace, dir.path(), StackFormat::Folded, |_| {});
        let text = std::fs::read_to_string(&out).unwrap();
        let mut options = inferno::flamegraph::Options::default();
        let mut svg = Vec::new();
        inferno::flamegraph::from_lines(&mut options, text.lines(), &mut svg)
            .unwrap_or_else(|e| panic!("inferno refused {trace:?}: {e}"));
        let svg = String::from_utf8(svg).unwrap();
        // inferno's root frame reports the total it read.
        let total: u64 = expected.folded.values().sum();
        let all = svg
            .split("<title>all (")
            .nth(1)
            .and_then(|rest| rest.split(" samples, 100%)").next())
            .unwrap_or_else(|| panic!("{trace:?}: no root frame"));
        assert_eq!(all.replace(',', ""), total.to_string(), "{trace:?}");
        // Every thread is a frame below the root.
        for stack in expected.folded.keys() {
            let thread = stack.split(';').next().unwrap();
            assert!(svg.contains(&format!("<title>{thread} (")), "{thread}");
        }
    }
}

/// Runs `python3 -c script args…`; its stdout, or why it could not run.
fn python(script: &str, args: &[&Path]) -> Result<String, String> {
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether python3 can import `module` (when not, the test fails unless
/// skipping is allowed).
fn have_module(module: &str) -> bool {
    match python(&format!("import {module}"), &[]) {
        Ok(_) => true,
        Err(why) => {
            // Python's last line names the error, after the traceback.
            let error = why.trim().lines().last().unwrap_or_default();
            skip::cannot_run(&format!("python3 cannot import {module} ({error})"));
            false
        }
    }
}

/// The schema file of the `speedscope` npm package, installed globally.
fn speedscope_schema() -> Option<PathBuf> {
    let root = Command::new("npm").args(["root", "-g"]).output().ok()?;
    let root = String::from_utf8_lossy(&root.stdout).trim().to_string();
    let schema = Path::new(&root).join("speedscope/dist/release/file-format-schema.json");
    schema.is_file().then_some(schema)
}

const VALIDATE: &str = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.validators.validator_for(schema)(schema).validate(json.load(open(sys.argv[2])))
print("valid")
"#;

#[test]
fn speedscope_files_match_the_published_schema() {
    let Some(schema) = speedscope_schema() else {
        skip::cannot_run("the speedscope npm package is not installed (npm install -g speedscope)");
        return;
    };
    if !have_module("jsonschema") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let (out, _) = export(&trace, dir.path(), StackFormat::Speedscope, |_| {});
        let said = python(VALIDATE, &[&schema, &out])
            .unwrap_or_else(|e| panic!("{trace:?} does not match the schema: {e}"));
        assert_eq!(said.trim(), "valid");
    }
    // The schema does reject what speedscope would not read.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"$schema":"https://www.speedscope.app/file-format-schema.json","profiles":[{"type":"evented"}],"shared":{"frames":[]}}"#,
    )
    .unwrap();
    assert!(python(VALIDATE, &[&schema, &bad]).is_err());
}

/// Decodes a Perfetto trace with the official proto and prints, as JSON,
/// per track: slice begins and ends, and the begins' interned names.
const DECODE: &str = r#"
import json, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
trace = pb.Trace()
trace.ParseFromString(open(sys.argv[1], 'rb').read())
tracks, names, out = {}, {}, {}
for packet in trace.packet:
    seq = packet.trusted_packet_sequence_id
    if packet.sequence_flags & 1:
        names[seq] = {}
    if packet.HasField('track_descriptor'):
        d = packet.track_descriptor
        tracks[d.uuid] = d.thread.tid
        out[str(d.thread.tid)] = {'name': d.thread.thread_name, 'begins': 0, 'ends': 0, 'frames': {}, 'last': 0}
    for n in packet.interned_data.event_names:
        names[seq][n.iid] = n.name
    if packet.HasField('track_event'):
        e = packet.track_event
        t = out[str(tracks[e.track_uuid])]
        assert packet.timestamp >= t['last'], 'time goes back'
        t['last'] = packet.timestamp
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            t['begins'] += 1
            name = names[seq][e.name_iid]
            t['frames'][name] = t['frames'].get(name, 0) + 1
        elif e.type == pb.TrackEvent.TYPE_SLICE_END:
            t['ends'] += 1
print(json.dumps(out))
"#;

#[test]
fn perfetto_traces_decode_with_the_official_proto() {
    if !have_module("perfetto.protos.perfetto.trace.perfetto_trace_pb2") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for trace in traces(dir.path()) {
        let expected = expected(&trace, None);
        let (out, _) = export(&trace, dir.path(), StackFormat::Perfetto, |_| {});
        let said = python(DECODE, &[&out]).unwrap_or_else(|e| panic!("{trace:?}: {e}"));
        let tracks: BTreeMap<String, Json> = serde_json::from_str(&said).unwrap();
        assert_eq!(tracks.len(), expected.containers.len(), "{trace:?}");
        for (thread, containers) in &expected.containers {
            let track = &tracks[&thread.to_string()];
            assert_eq!(track["begins"].as_u64(), Some(*containers), "{trace:?}");
            assert_eq!(track["ends"].as_u64(), Some(*containers), "{trace:?}");
            if *containers > 0 {
                assert_eq!(track["last"].as_u64(), Some(expected.ends[thread]));
            }
        }
        // Each name begins as many slices as the trace has calls of it.
        let mut names: BTreeMap<String, u64> = BTreeMap::new();
        for track in tracks.values() {
            for (name, n) in track["frames"].as_object().unwrap() {
                *names.entry(name.clone()).or_default() += n.as_u64().unwrap();
            }
        }
        assert_eq!(names, expected.calls, "{trace:?}");
    }
}
