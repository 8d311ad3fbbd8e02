//! The Python package (`python/`): built with maturin into a virtual
//! environment of its own, then its pytest suite run against it.
//!
//! The environment is made in a temporary folder each run; the package's
//! Rust build goes to the workspace's target folder as any build of it
//! does (cargo holds no lock on it while tests run), so it is incremental
//! and shares the library's dependencies. The tests get the `tracetree`
//! binary beside this test's (`gen` makes their large traces) and the
//! reference traces.
//! Without `python3` (3.9+), its `venv` or `pip`, or with PyPI out of
//! reach, the test says SKIPPED (or fails, unless skipping is allowed); a
//! test pytest skipped is reported the same way.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tracetree_testkit::skip;

/// The repository.
fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `tracetree` binary of this build, when it was built.
fn cli_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    // target/release/deps/python-HASH → target/release/tracetree
    let binary = exe.parent()?.parent()?.join("tracetree");
    binary.is_file().then_some(binary)
}

fn run(command: &mut Command) -> std::io::Result<Output> {
    command.stdin(std::process::Stdio::null()).output()
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A virtual environment in `dir` with pip; `None` (said) when Python,
/// venv or pip is missing.
fn virtual_env(dir: &Path) -> Option<PathBuf> {
    let version =
        run(Command::new("python3").args(["-c", "import sys; print(sys.version_info >= (3, 9))"]));
    match version {
        Ok(output) if String::from_utf8_lossy(&output.stdout).trim() == "True" => {}
        Ok(output) => {
            skip::cannot_run(&format!(
                "python3 is not CPython 3.9 or later: {}",
                text(&output)
            ));
            return None;
        }
        Err(error) => {
            skip::cannot_run(&format!("python3 not found ({error})"));
            return None;
        }
    }
    let venv = dir.join("venv");
    let made = run(Command::new("python3").arg("-m").arg("venv").arg(&venv));
    match made {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            skip::cannot_run(&format!(
                "python3 -m venv failed (the python3-venv package?): {}",
                text(&output)
            ));
            return None;
        }
        Err(error) => {
            skip::cannot_run(&format!("python3 -m venv did not run ({error})"));
            return None;
        }
    }
    let python = venv.join("bin").join("python");
    let pip = run(Command::new(&python).args(["-m", "pip", "--version"]));
    if !pip.as_ref().is_ok_and(|o| o.status.success()) {
        skip::cannot_run("the virtual environment has no pip (python3-venv's ensurepip)");
        return None;
    }
    Some(python)
}

#[test]
fn python_package_passes_its_tests() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let Some(python) = virtual_env(dir.path()) else {
        return;
    };
    // What the package's build and tests use, from PyPI.
    let wanted = [
        "maturin>=1.7,<2",
        "pytest",
        "pyarrow",
        "pandas",
        "polars",
        "duckdb",
    ];
    let installed = run(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(wanted));
    match installed {
        Ok(output) if output.status.success() => {}
        Ok(output) => {
            skip::cannot_run(&format!(
                "pip could not install {} from PyPI: {}",
                wanted.join(", "),
                text(&output)
            ));
            return;
        }
        Err(error) => {
            skip::cannot_run(&format!("pip did not run ({error})"));
            return;
        }
    }
    // The package as the README installs it (maturin from the environment).
    // The environment's scripts first, as an activated environment has
    // them: the build backend runs its `maturin`.
    let bin = python.parent().expect("the environment's bin folder");
    let mut path = std::ffi::OsString::from(bin);
    if let Some(rest) = std::env::var_os("PATH") {
        path.push(":");
        path.push(rest);
    }
    let package = run(Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .arg("--no-build-isolation")
        .arg(repo().join("python"))
        .env("PATH", &path))
    .expect("pip runs");
    assert!(
        package.status.success(),
        "pip install ./python failed:\n{}",
        text(&package)
    );
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"])
        .arg("--basetemp")
        .arg(dir.path().join("pytest"))
        .arg(repo().join("python").join("tests"))
        .current_dir(dir.path())
        // No bytecode beside the tests.
        .env("PYTHONDONTWRITEBYTECODE", "1");
    if let Some(cli) = cli_binary() {
        pytest.env("TRACETREE_CLI", cli);
    }
    let output = run(&mut pytest).expect("pytest runs");
    let report = text(&output);
    assert!(output.status.success(), "pytest failed:\n{report}");
    let skipped: Vec<&str> = report
        .lines()
        .filter(|line| line.starts_with("SKIPPED"))
        .collect();
    if !skipped.is_empty() {
        skip::cannot_run(&format!(
            "pytest skipped {} test(s): {}",
            skipped.len(),
            skipped.join("; ")
        ));
    }
    let summary = report.lines().last().unwrap_or_default().to_string();
    assert!(summary.contains("passed"), "{report}");
    eprintln!("pytest: {summary}");
}
