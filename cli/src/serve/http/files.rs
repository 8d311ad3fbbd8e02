//! Which files a page may open: over HTTP, `trace/open` names one of the
//! traces given on the command line (by the name `initialize` lists), or
//! a relative path under `--root`, never any other path. A path under the
//! root is resolved with its symbolic links and must still be under the
//! (resolved) root; `..`, absolute paths and links leading out are
//! refused. Methods that write a file a page names (`trace/export`) or
//! choose a folder to write in (`options.cacheDir`) are not served.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::serve::errors::{ServeError, code};
use crate::serve::protocol::{Served, ServedTrace};

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
    }
}
