//! The index files the dump writer writes, one rule of `FORMAT-NOTES.md`
//! per test, on the sample traces.

use tracetree::generate::samples;
use tracetree::lowlevel::{Object, ObjectKind};
use tracetree_testkit::layout::{
    BLOCK_HEADER_LEN, CELL_LEN, FILE_HEADER_LEN, INDEX_FOOTER_LEN, INDEX_MAGIC,
};

/// A cell's fields as stored: these tests check the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cell {
    kind: ObjectKind,
    id: i32,
    start: i64,
    end: i64,
}

/// Each sample's data, index and cells.
fn samples() -> Vec<(Vec<u8>, Vec<u8>, Vec<Cell>)> {
    samples::all()
        .into_iter()
        .map(|(_, generate)| {
            let (data, index) = generate().unwrap().to_bytes().unwrap();
            // Every cell but the footer's: kind byte, then id, start and
            // end, big-endian.
            let body = &index[FILE_HEADER_LEN as usize..index.len() - INDEX_FOOTER_LEN];
            let cells = body
                .chunks_exact(CELL_LEN)
                .map(|raw| Cell {
                    kind: ObjectKind::from_byte(raw[0]).expect("a known kind"),
                    id: i32::from_be_bytes(raw[1..5].try_into().unwrap()),
                    start: i64::from_be_bytes(raw[5..13].try_into().unwrap()),
                    end: i64::from_be_bytes(raw[13..21].try_into().unwrap()),
                })
                .collect();
            (data, index, cells)
        })
        .collect()
}

/// The kind and id of the object at `at`, read as `FORMAT-NOTES.md` lays
/// them out: the kind byte, then the id (big-endian `i32`), after a code
/// location's own kind byte for a code location.
fn kind_and_id(data: &[u8], at: u64) -> Option<(ObjectKind, i32)> {
    let at = usize::try_from(at).ok()?;
    let kind = ObjectKind::from_byte(*data.get(at)?)?;
    let id_at = if kind == ObjectKind::CodeLocation {
        at + 2
    } else {
        at + 1
    };
    let id = data.get(id_at..id_at + 4)?;
    Some((kind, i32::from_be_bytes(id.try_into().ok()?)))
}

fn block_cells(cells: &[Cell]) -> impl Iterator<Item = (usize, &Cell)> {
    cells
        .iter()
        .enumerate()
        .filter(|(_, cell)| cell.kind == ObjectKind::BlockStart)
}

#[test]
fn reference_cells_point_at_an_object_of_their_kind_and_id() {
    for (data, _, cells) in samples() {
        for cell in cells.iter().filter(|cell| cell.kind.is_reference()) {
            assert_eq!(
                kind_and_id(&data, cell.start as u64),
                Some((cell.kind, cell.id)),
                "{cell:?}"
            );
        }
    }
}

#[test]
fn block_cells_span_block_start_to_block_end_and_follow_the_blocks_other_cells() {
    for (data, _, cells) in samples() {
        let mut previous_block_cell = None;
        for (position, (at, cell)) in block_cells(&cells).enumerate() {
            let (start, end) = (cell.start as usize, cell.end as usize);
            assert_eq!(cell.id, position as i32, "block ids are thread positions");
            assert_eq!(
                kind_and_id(&data, start as u64),
                Some((ObjectKind::BlockStart, cell.id))
            );
            assert_eq!(data[end], ObjectKind::BlockEnd as u8);
            // The cells of this block's objects come right before its cell.
            let first = previous_block_cell.map_or(0, |i| i + 1);
            for other in &cells[first..at] {
                let physical = if other.kind == ObjectKind::Tracepoint {
                    start + BLOCK_HEADER_LEN as usize + other.end as usize
                } else {
                    other.start as usize
                };
                assert!(
                    start < physical && physical < end,
                    "{other:?} outside {cell:?}"
                );
            }
            previous_block_cell = Some(at);
        }
        assert_eq!(
            previous_block_cell,
            Some(cells.len() - 1),
            "a block cell ends the cells"
        );
    }
}

#[test]
fn thread_names_follow_block_starts() {
    for (data, _, cells) in samples() {
        for (_, cell) in block_cells(&cells) {
            let name_at = cell.start as u64 + BLOCK_HEADER_LEN;
            assert_eq!(
                kind_and_id(&data, name_at),
                Some((ObjectKind::ThreadName, cell.id))
            );
        }
    }
}

#[test]
fn container_cells_hold_logical_offsets_after_the_header_and_of_the_footer() {
    for (data, _, cells) in samples() {
        for (at, cell) in cells.iter().enumerate() {
            if cell.kind != ObjectKind::Tracepoint {
                continue;
            }
            // A container is in the block whose cell is the next block cell.
            let block = cells[at..]
                .iter()
                .find(|c| c.kind == ObjectKind::BlockStart)
                .unwrap();
            let payload = (block.start + BLOCK_HEADER_LEN as i64) as usize;
            assert!(cell.start <= cell.end);
            assert_eq!(
                data[payload + cell.end as usize],
                ObjectKind::TracepointFooter as u8,
                "{cell:?}"
            );
            // Some container header of this event ends right at `start`.
            let header_end = payload + cell.start as usize;
            let found = (payload..header_end).any(|at| {
                matches!(
                    Object::parse(&data[at..header_end], at as u64, None),
                    Ok((Object::Tracepoint(tp), len)) if tp.is_container()
                        && tp.event().get() == cell.id
                        && at + len == header_end
                )
            });
            assert!(
                found,
                "no container header of event {} ends at {header_end}",
                cell.id
            );
        }
    }
}

#[test]
fn containers_have_one_cell_each_and_leaves_none() {
    for (data, _, cells) in samples() {
        let trace =
            tracetree::read::EagerTrace::load(tracetree::TraceBytes::from_vec(data)).unwrap();
        let mut containers: Vec<i32> = trace
            .nodes()
            .filter(|n| n.tracepoint().is_container())
            .map(|n| n.tracepoint().event().get())
            .collect();
        let mut container_cells: Vec<i32> = cells
            .iter()
            .filter(|c| c.kind == ObjectKind::Tracepoint)
            .map(|c| c.id)
            .collect();
        containers.sort_unstable();
        container_cells.sort_unstable();
        assert_eq!(container_cells, containers);
    }
}

#[test]
fn the_index_ends_with_an_eof_cell_at_the_last_block_header_and_the_magic() {
    for (data, index, cells) in samples() {
        assert_eq!(
            (index.len() - FILE_HEADER_LEN as usize - INDEX_FOOTER_LEN) % CELL_LEN,
            0
        );
        let footer = &index[index.len() - INDEX_FOOTER_LEN..];
        let last_block = block_cells(&cells).last().unwrap().1;
        let eof = last_block.start + BLOCK_HEADER_LEN as i64 - 1;
        let mut expected = vec![ObjectKind::Eof as u8];
        expected.extend((-1i32).to_be_bytes());
        expected.extend(eof.to_be_bytes());
        expected.extend(eof.to_be_bytes());
        expected.extend(INDEX_MAGIC.to_be_bytes());
        assert_eq!(footer, &expected[..]);
        assert_eq!(data.last(), Some(&(ObjectKind::Eof as u8)));
    }
}
