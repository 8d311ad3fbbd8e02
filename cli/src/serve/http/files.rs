//! Which files a page may open: over HTTP, `trace/open` names one of the
//! traces given on the command line (by the name `initialize` lists), or
//! a relative path under `--root`, never any other path. A path under the
//! root is resolved with its symbolic links and must still be under the
//! (resolved) root; `..`, absolute paths and links leading out are
//! refused. Methods that write a file a page names (`trace/export`) or
//! choose a folder to write in (`options.cacheDir`) are not served.
//! `trace/files` lists the root's files for a page to choose from: at
//! most [`MAX_LISTED`] regular files found among the first
//! [`MAX_VISITED`] entries, hidden ones and index files left out, links
//! not followed (so nothing listed leads out).

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::serve::errors::{ServeError, code};
use crate::serve::protocol::{FileList, Served, ServedTrace};

/// The most files `trace/files` lists.
pub const MAX_LISTED: usize = 2000;

/// The most entries under the root `trace/files` looks at.
pub const MAX_VISITED: usize = 100_000;

/// How deep under the root `trace/files` looks.
const MAX_DEPTH: usize = 8;

/// A trace given on the command line.
#[derive(Debug, Clone)]
pub struct Named {
    /// Its name, as given.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

/// The files this server serves.
#[derive(Debug)]
pub struct Files {
    named: Vec<Named>,
    /// `--root`, resolved.
    root: Option<PathBuf>,
    follow: bool,
}

impl Files {
    /// The traces `paths` and, with `root`, the files under it; `follow`
    /// when the page should follow the named traces' growth.
    pub fn new(paths: &[PathBuf], root: Option<&Path>, follow: bool) -> std::io::Result<Files> {
        let root = match root {
            Some(root) => Some(root.canonicalize().map_err(|e| {
                std::io::Error::new(e.kind(), format!("--root {}: {e}", root.display()))
            })?),
            None => None,
        };
        let named = paths
            .iter()
            .map(|path| Named {
                name: path.display().to_string(),
                path: path.clone(),
            })
            .collect();
        Ok(Files {
            named,
            root,
            follow,
        })
    }

    /// What `initialize` tells a page.
    pub fn served(&self) -> Served {
        Served {
            traces: self
                .named
                .iter()
                .map(|named| ServedTrace {
                    name: named.name.clone(),
                    follow: self.follow,
                })
                .collect(),
            root: self.root.is_some(),
        }
    }

    /// The file `name` opens, else `INVALID_PARAMS` on `path`.
    pub fn resolve(&self, name: &str) -> Result<PathBuf, ServeError> {
        let method = "trace/open";
        if let Some(named) = self.named.iter().find(|n| n.name == name) {
            return Ok(named.path.clone());
        }
        let refuse = |why: String| ServeError::invalid_params(method, "path", why);
        let Some(root) = &self.root else {
            return Err(refuse(format!(
                "{name:?} is not served: over HTTP only the traces named on the server's \
                 command line open (initialize lists them as served.traces)"
            )));
        };
        let relative = Path::new(name);
        let plain = relative
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if name.is_empty() || !plain {
            return Err(refuse(format!(
                "{name:?} is not a relative path under the served folder (no `..`, no \
                 absolute path)"
            )));
        }
        let path = root.join(relative).canonicalize().map_err(|e| {
            ServeError::new(
                code::FILE_ERROR,
                format!("{method}: {name:?} under the served folder: {e}"),
            )
            .with("path", name)
        })?;
        if !path.starts_with(root) {
            return Err(refuse(format!(
                "{name:?} leads out of the served folder (a symbolic link)"
            )));
        }
        Ok(path)
    }

    /// The files under the root a page may open (`trace/files`), sorted
    /// by path; none without a root.
    pub fn list(&self) -> FileList {
        let mut list = FileList {
            files: Vec::new(),
            truncated: false,
        };
        let Some(root) = &self.root else {
            return list;
        };
        let hidden = |entry: &walkdir::DirEntry| {
            entry.depth() > 0 && entry.file_name().to_string_lossy().starts_with('.')
        };
        let entries = walkdir::WalkDir::new(root)
            .follow_links(false)
            .max_depth(MAX_DEPTH)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|entry| !hidden(entry));
        for (visited, entry) in entries.enumerate() {
            if visited == MAX_VISITED || list.files.len() == MAX_LISTED {
                list.truncated = true;
                break;
            }
            // An entry that cannot be read is not one a page could open.
            let Ok(entry) = entry else { continue };
            let index = entry.path().extension().is_some_and(|e| e == "idx");
            if !entry.file_type().is_file() || index {
                continue;
            }
            let relative = entry.path().strip_prefix(root).ok().and_then(Path::to_str);
            if let Some(relative) = relative {
                list.files.push(relative.to_string());
            }
        }
        list
    }

    /// `params` of a request made over HTTP, checked and rewritten: a
    /// `trace/open`'s path resolved; what a page may not ask refused.
    pub fn admit(&self, method: &str, params: &mut Value) -> Result<(), ServeError> {
        match method {
            "trace/export" => Err(ServeError::new(
                code::METHOD_NOT_FOUND,
                "trace/export: not served over HTTP (it writes a file the page would name); \
                 use `tracetree export`"
                    .to_string(),
            )),
            "trace/open" => {
                if params
                    .pointer("/options/cacheDir")
                    .is_some_and(|v| !v.is_null())
                {
                    return Err(ServeError::invalid_params(
                        method,
                        "options.cacheDir",
                        "not taken over HTTP: the server's cache is used",
                    ));
                }
                let Some(name) = params.get("path").and_then(Value::as_str) else {
                    // The method names the missing or wrong field.
                    return Ok(());
                };
                let path = self.resolve(name)?;
                let Some(text) = path.to_str() else {
                    return Err(ServeError::invalid_params(
                        method,
                        "path",
                        format!("{name:?}: its file's path is not UTF-8"),
                    ));
                };
                params["path"] = Value::String(text.to_string());
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_traces_and_files_under_the_root_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/a.trace"), b"x").unwrap();
        std::fs::write(dir.path().join("secret"), b"x").unwrap();
        let named = dir.path().join("named.trace");
        let files = Files::new(std::slice::from_ref(&named), Some(&root), false).unwrap();
        assert_eq!(files.resolve(&named.display().to_string()).unwrap(), named);
        let root = root.canonicalize().unwrap();
        assert_eq!(
            files.resolve("sub/a.trace").unwrap(),
            root.join("sub/a.trace")
        );
        for bad in ["../secret", "sub/../../secret", "/etc/passwd", ""] {
            let error = files.resolve(bad).unwrap_err();
            assert_eq!(error.code, code::INVALID_PARAMS, "{bad}");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
            let error = files.resolve("link").unwrap_err();
            assert!(error.message.contains("leads out"), "{}", error.message);
        }
        let none = Files::new(&[], None, false).unwrap();
        assert!(none.resolve("sub/a.trace").is_err());
        assert!(none.list().files.is_empty());
    }

    #[test]
    fn the_listing_holds_what_opens_and_nothing_that_leads_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        for folder in ["sub/deeper", ".hidden", "empty"] {
            std::fs::create_dir_all(root.join(folder)).unwrap();
        }
        for file in [
            "b.trace",
            "b.trace.idx",
            "sub/a.jfr",
            "sub/deeper/c",
            ".hidden/d",
        ] {
            std::fs::write(root.join(file), b"x").unwrap();
        }
        std::fs::write(dir.path().join("secret"), b"x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("secret"), root.join("link")).unwrap();
        let files = Files::new(&[], Some(&root), false).unwrap();
        let list = files.list();
        assert_eq!(list.files, ["b.trace", "sub/a.jfr", "sub/deeper/c"]);
        assert!(!list.truncated);
        for name in &list.files {
            assert!(files.resolve(name).is_ok(), "{name}");
        }
        // Past the bound, the listing says so.
        let many = root.join("many");
        std::fs::create_dir_all(&many).unwrap();
        for i in 0..=MAX_LISTED {
            std::fs::write(many.join(format!("{i:05}")), b"").unwrap();
        }
        let list = files.list();
        assert_eq!(list.files.len(), MAX_LISTED);
        assert!(list.truncated);
    }
}
