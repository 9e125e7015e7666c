//! Recency-ordered sets, shared by the data caches and the TLB-like MMU caches: slot 0 holds the
//! most recently used entry, so LRU replacement needs no per-entry state and the victim is the
//! last slot.

/// Move `s[i]` to `s[0]`, shifting `s[0..i]` back by one slot (order otherwise kept).
///
/// An open-coded loop rather than `copy_within`: sets hold at most a few dozen entries and hits
/// are usually near the front, where a `memmove` call costs more than the moves.
#[inline(always)]
pub fn move_to_front(s: &mut [u64], i: usize) {
    let s = &mut s[..=i];
    let x = s[i];
    let mut j = i;
    while j > 0 {
        s[j] = s[j - 1];
        j -= 1;
    }
    s[0] = x;
}

#[cfg(test)]
mod tests {
    use super::move_to_front;

    #[test]
    fn moving_an_entry_to_the_front_keeps_the_others_in_order() {
        let mut s = [10, 11, 12, 13, 14];
        move_to_front(&mut s, 3);
        assert_eq!(s, [13, 10, 11, 12, 14]);
        move_to_front(&mut s, 0);
        assert_eq!(s, [13, 10, 11, 12, 14]);
        move_to_front(&mut s, 4);
        assert_eq!(s, [14, 13, 10, 11, 12]);
    }
}
