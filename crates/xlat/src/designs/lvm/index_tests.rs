//! Unit tests of `index.rs` that need its private training functions.

use super::*;

#[test]
fn a_model_over_a_sparse_span_is_judged_without_allocating_its_table() {
    // A dense cluster and a few keys 2^40 pages away: the table of this model has about
    // 2^33 slots (64 GiB of keys if materialized; memcached at 75 GiB asked for 98.7 GB
    // and aborted).
    let mut keys: Vec<Mapping> = (0..4096)
        .map(|v| Mapping::writable(v, v, PageSize::Size4K))
        .collect();
    keys.extend((0..4).map(|i| {
        let v = (1 << 40) + i * 4096;
        Mapping::writable(v, v, PageSize::Size4K)
    }));
    let cfg = LvmConfig::default();
    let model = LinearModel {
        slope: Fixed(Fixed::from_f64(1.0 / 128.0).0),
        intercept: Fixed(0),
    };
    let fit = place(&cfg, model, &keys);
    assert!(fit.cap > 1 << 32, "cap {}", fit.cap);
    assert_eq!(fit.placement.len(), keys.len());
    assert!(
        fit.order > cfg.max_gpt_order,
        "a table this large is never installed"
    );
}
