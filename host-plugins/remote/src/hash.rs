//! The content hash images are cached by on a proxy (shipped once per rank, found again by
//! their hash). Two independent 64-bit multiply-xorshift lanes over 8-byte words and the
//! length: fast over megabytes, and 128 bits make an accidental collision between a
//! program's images beyond reach. It is no security boundary and need not be one: the proxy
//! runs the application's code anyway.

use crate::wire::ImageHash;

const K0: u64 = 0x9e37_79b9_7f4a_7c15;
const K1: u64 = 0xc2b2_ae3d_27d4_eb4f;

fn mix(mut x: u64) -> u64 {
    x ^= x >> 31;
    x = x.wrapping_mul(0x7fb5_d329_728e_a185);
    x ^= x >> 27;
    x = x.wrapping_mul(0x81da_def4_bc2d_d44d);
    x ^ (x >> 33)
}

pub fn image_hash(bytes: &[u8]) -> ImageHash {
    let (mut a, mut b) = (
        K0 ^ bytes.len() as u64,
        K1.rotate_left(17) ^ bytes.len() as u64,
    );
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("chunks of 8"));
        a = (a ^ w).wrapping_mul(K0).rotate_left(29);
        b = (b ^ w.rotate_left(23)).wrapping_mul(K1).rotate_left(31);
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    let w = u64::from_le_bytes(tail);
    a = mix(a ^ w ^ b.rotate_left(7));
    b = mix(b ^ w.rotate_left(41) ^ a);
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&a.to_le_bytes());
    out[8..].copy_from_slice(&b.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::image_hash;

    #[test]
    fn every_byte_and_the_length_count() {
        let base = vec![7u8; 1000];
        let h = image_hash(&base);
        for i in [0, 1, 7, 8, 500, 999] {
            let mut changed = base.clone();
            changed[i] ^= 1;
            assert_ne!(image_hash(&changed), h, "byte {i}");
        }
        assert_ne!(image_hash(&base[..999]), h);
        assert_ne!(image_hash(&[]), image_hash(&[0]));
        assert_eq!(image_hash(&base), h);
    }
}
