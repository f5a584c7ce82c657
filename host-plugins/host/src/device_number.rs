//! `omp_get_device_num()` inside an offloaded region.
//!
//! clang-22 compiles the call in an x86_64 image as a call to the external function
//! `omp_get_device_num`, which the dynamic loader binds to libomp's copy: that one answers the
//! initial device, wherever it is called from. Each device loads its own copy of an image, so
//! after loading it for device N the plugin points that copy's GOT slot(s) for the function at
//! one that answers N. Every thread the region starts (teams, parallel) goes through the same
//! slot, so the answer holds everywhere in the region.

type Answer = extern "C" fn() -> i32;

extern "C" fn device_number<const N: i32>() -> i32 {
    N
}

macro_rules! device_numbers {
    ($($n:literal)*) => { [$(device_number::<$n> as Answer),*] };
}

/// Devices with a number beyond this table keep libomp's binding (an answer per device needs
/// a distinct function address).
static ANSWERS: [Answer; 64] = device_numbers!(
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63
);

/// The function to bind for device `device`, if the table has one.
pub fn answer_for(device: usize) -> Option<usize> {
    ANSWERS.get(device).map(|f| *f as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_device_has_its_own_answer() {
        for device in [0usize, 1, 7, 63] {
            let f = answer_for(device).expect("in the table");
            // SAFETY: the table holds `extern "C" fn() -> i32` functions.
            let f: Answer = unsafe { std::mem::transmute::<usize, Answer>(f) };
            assert_eq!(f(), device as i32);
        }
        assert!(answer_for(64).is_none());
    }
}
