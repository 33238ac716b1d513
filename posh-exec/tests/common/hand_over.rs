//! Files handed over to the user a posh-proxy becomes when a test starts it as root (a root
//! proxy refuses to start without `--user`): what root owns made that user's, as an export
//! belongs to the proxy's user in a deployment (what a test gave another owner keeps it), what
//! the test makes there later too (a default ACL on each directory gives that user every right on
//! what is made inside), and the temporary directories above searchable by others, so that the
//! proxy, once it runs as that user, reaches them by their paths. One file for the test binaries
//! of posh-exec (`common/proxy.rs`) and the root package's, which include it by path.
#![allow(dead_code)] // each test binary uses some of it

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

/// `dir` handed over to user and group `id`.
pub fn hand_over(dir: &Path, id: u32) {
    chown_all_of_root(dir, id);
    for_each_directory(dir, &mut |dir| {
        rustix::fs::setxattr(dir, "system.posix_acl_default", &default_acl(id), rustix::fs::XattrFlags::empty())
            .unwrap_or_else(|e| panic!("cannot give uid {id} what is made in {} (a default ACL): {e}", dir.display()))
    });
    let temp = std::env::temp_dir().canonicalize().unwrap();
    let dir = dir.canonicalize().unwrap();
    for above in dir.ancestors().skip(1).take_while(|a| a.starts_with(&temp) && *a != temp) {
        let mut permissions = std::fs::metadata(above).unwrap().permissions();
        permissions.set_mode(permissions.mode() | 0o001);
        std::fs::set_permissions(above, permissions).unwrap();
    }
}

/// A default ACL as the kernel reads it (`posix_acl_xattr.h`): version 2, then entries of tag,
/// permissions and id, by tag: the owner rwx, user `id` rwx, the group r-x, the mask rwx, others
/// r-x.
fn default_acl(id: u32) -> Vec<u8> {
    const NO_ID: u32 = u32::MAX;
    let entries = [(0x01u16, 7u16, NO_ID), (0x02, 7, id), (0x04, 5, NO_ID), (0x10, 7, NO_ID), (0x20, 5, NO_ID)];
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, permissions, id) in entries {
        acl.extend(tag.to_le_bytes().into_iter().chain(permissions.to_le_bytes()).chain(id.to_le_bytes()));
    }
    acl
}

/// `visit` on `dir` and every directory below it (links not followed).
fn for_each_directory(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    visit(dir);
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() && !path.is_symlink() {
            for_each_directory(&path, visit);
        }
    }
}

/// `dir` and what root owns in it owned by user and group `id` (links themselves, not followed).
fn chown_all_of_root(dir: &Path, id: u32) {
    use std::os::unix::fs::MetadataExt as _;
    let owned_by_root = |path: &Path| std::fs::symlink_metadata(path).unwrap().uid() == 0;
    if owned_by_root(dir) {
        std::os::unix::fs::chown(dir, Some(id), Some(id)).unwrap();
    }
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() && !path.is_symlink() {
            true => chown_all_of_root(&path, id),
            false if owned_by_root(&path) => std::os::unix::fs::lchown(&path, Some(id), Some(id)).unwrap(),
            false => {}
        }
    }
}
