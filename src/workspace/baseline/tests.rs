//! The kept listing and the CRLF conversion.

use super::listing::{parse_listing, LISTING_FILE, LISTING_MAGIC};
use super::*;

#[test]
fn the_kept_listing_round_trips_and_refuses_what_does_not_parse() {
    let state = tempfile::tempdir().unwrap();
    let commit = gix::ObjectId::from_hex(b"e11c2d6d94ef0000000000000000000000000000").unwrap();
    let blob = gix::ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap();
    let mut entries = BTreeMap::new();
    for (p, kind) in [
        (&b"a b/\xff.py"[..], EntryKind::File),
        (b"bin/run", EntryKind::Executable),
        (b"link", EntryKind::Symlink),
        (b"sub", EntryKind::Submodule),
    ] {
        entries.insert(p.to_vec(), gitread::BaseEntry { kind, oid: blob });
    }
    let tree = gitread::BaseTree { commit, entries };
    let ignore = vec![(b".gitignore".to_vec(), b"*.pyc\n".to_vec())];
    save_listing(state.path(), &tree, &ignore);
    let (back, back_ignore) = load_listing(state.path(), commit).unwrap();
    assert_eq!(back, tree);
    assert_eq!(back_ignore, ignore);
    // Another commit, a cut-short file or another format: not used (read from the store).
    assert!(load_listing(state.path(), blob).is_none());
    let bytes = std::fs::read(state.path().join(LISTING_FILE)).unwrap();
    for cut in [
        0,
        10,
        LISTING_MAGIC.len() + 20,
        bytes.len() - 30,
        bytes.len() - 3,
    ] {
        assert!(
            parse_listing(&bytes[..cut], commit).is_none(),
            "cut at {cut}"
        );
    }
    assert!(parse_listing(b"{\"schema\": 1}", commit).is_none());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(parse_listing(&longer, commit).is_none());
}
