//! Byte images of the structures a GPU plugin writes to or reads from device memory, through
//! `zerocopy` (the `rustomp_abi` layouts derive `IntoBytes` / `FromBytes` and assert their sizes
//! and offsets), and the indirect-call table in the order the device's binary search needs.
//!
//! The images are in the host's byte order, which is the devices' (little-endian): the plugins
//! build only for little-endian hosts.

use core::mem::{offset_of, size_of};
use rustomp_abi::{
    ConfigurationEnvironment, DeviceEnvironment, FptrMapEntry, IndirectTableHeader,
    KernelEnvironment, KernelLaunchEnvironment,
};
use zerocopy::{FromBytes, IntoBytes};

const _: () = assert!(
    cfg!(target_endian = "little"),
    "the device byte images are the host's bytes: NVIDIA and AMD GPUs are little-endian"
);

pub const DEVICE_ENVIRONMENT_SIZE: usize = size_of::<DeviceEnvironment>();
pub const KERNEL_ENVIRONMENT_SIZE: usize = size_of::<KernelEnvironment>();
pub const LAUNCH_ENVIRONMENT_SIZE: usize = size_of::<KernelLaunchEnvironment>();

/// `__omp_rtl_device_environment` as the device reads it.
pub fn device_environment_bytes(env: &DeviceEnvironment) -> [u8; DEVICE_ENVIRONMENT_SIZE] {
    zerocopy::transmute!(*env)
}

/// A kernel's first argument: zeroed counters and the teams-reduction buffer's address.
///
/// Written field by field: `KernelLaunchEnvironment::reduction_buffer` is a pointer in the
/// shared layout (the device runtime uses it as one), so the struct has no `IntoBytes`.
pub fn launch_environment_bytes(reduction_buffer: u64) -> [u8; LAUNCH_ENVIRONMENT_SIZE] {
    let mut b = [0u8; LAUNCH_ENVIRONMENT_SIZE];
    // The counters (`reduction_cnt`, `reduction_iter_cnt`) start at zero.
    let at = offset_of!(KernelLaunchEnvironment, reduction_buffer);
    b[at..at + size_of::<u64>()].copy_from_slice(&reduction_buffer.to_le_bytes());
    b
}

/// The configuration part of a `<kernel>_kernel_environment` global read from the device;
/// `None` when `bytes` is shorter than a `KernelEnvironment`.
pub fn parse_kernel_environment(bytes: &[u8]) -> Option<ConfigurationEnvironment> {
    let (env, _) = KernelEnvironment::read_from_prefix(bytes).ok()?;
    Some(env.configuration)
}

/// Bytes of the teams-reduction buffer a kernel needs: `ReductionDataSize * ReductionBufferLength`
/// (0 when the kernel has no teams reduction).
pub fn reduction_buffer_bytes(config: &ConfigurationEnvironment) -> usize {
    let size = config.reduction_data_size.max(0) as usize;
    let length = config.reduction_buffer_length.max(0) as usize;
    size.saturating_mul(length)
}

/// The indirect-call table in the order the device binary-searches it: `{host, device}` pairs
/// sorted by host address, exact duplicates (one function registered twice) removed. The front
/// builds it once per image; every plugin publishes it as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndirectTable(Vec<FptrMapEntry>);

impl IndirectTable {
    pub fn new(mut entries: Vec<FptrMapEntry>) -> Self {
        entries.sort_unstable();
        entries.dedup();
        Self(entries)
    }

    pub fn entries(&self) -> &[FptrMapEntry] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The device address for `host`, or `host` itself when the table does not hold it (seed
    /// 000's contract, the device runtime's answer). The CPU plugin answers host-offload images
    /// with it.
    pub fn translate(&self, host: u64) -> u64 {
        match self.0.binary_search_by_key(&host, |e| e.host) {
            Ok(i) => self.0[i].device,
            Err(_) => host,
        }
    }

    /// The block `__rustomp_indirect_call_table` points at: an [`IndirectTableHeader`], then
    /// `{u64 host; u64 device}` per entry (what the device environment's pointer, which is
    /// [`IndirectTable::ENTRIES_OFFSET`] bytes in, shows LLVM's device runtime).
    pub fn block(&self) -> Vec<u8> {
        let header = IndirectTableHeader {
            entries: self.0.len() as u64,
            reserved: 0,
        };
        let mut block = header.as_bytes().to_vec();
        block.extend_from_slice(self.0.as_bytes());
        block
    }

    /// Where the entries start in [`IndirectTable::block`].
    pub const ENTRIES_OFFSET: usize = size_of::<IndirectTableHeader>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_environment_field_offsets() {
        let env = DeviceEnvironment {
            debug_kind: 0x11,
            num_devices: 0x22,
            device_num: 0x33,
            dynamic_mem_size: 0x44,
            clock_frequency: 0x5555_0000_0000_0055,
            indirect_call_table: 0x6666_0000_0066,
            indirect_call_table_size: 7,
            hardware_parallelism: 0x88,
        };
        let b = device_environment_bytes(&env);
        assert_eq!(b.len(), 48);
        assert_eq!(
            &b[0..16],
            &[0x11, 0, 0, 0, 0x22, 0, 0, 0, 0x33, 0, 0, 0, 0x44, 0, 0, 0]
        );
        assert_eq!(
            u64::from_le_bytes(b[16..24].try_into().unwrap()),
            0x5555_0000_0000_0055
        );
        assert_eq!(
            u64::from_le_bytes(b[24..32].try_into().unwrap()),
            0x6666_0000_0066
        );
        assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 7);
        assert_eq!(u64::from_le_bytes(b[40..48].try_into().unwrap()), 0x88);
    }

    #[test]
    fn launch_environment_has_zero_counters_and_the_buffer() {
        let b = launch_environment_bytes(0xdead_beef_0000);
        assert_eq!(&b[0..8], &[0; 8]);
        assert_eq!(
            u64::from_le_bytes(b[8..16].try_into().unwrap()),
            0xdead_beef_0000
        );
    }

    #[test]
    fn kernel_environment_configuration_is_read_at_its_offsets() {
        // What clang-22 emits for an SPMD kernel with a teams reduction of one double.
        let mut b = vec![0u8; 48];
        b[0] = 1; // UseGenericStateMachine
        b[1] = 0; // MayUseNestedParallelism
        b[2] = 2; // ExecMode SPMD
        b[4..8].copy_from_slice(&1i32.to_le_bytes());
        b[8..12].copy_from_slice(&256i32.to_le_bytes());
        b[12..16].copy_from_slice(&(-1i32).to_le_bytes());
        b[16..20].copy_from_slice(&(-1i32).to_le_bytes());
        b[20..24].copy_from_slice(&8i32.to_le_bytes());
        b[24..28].copy_from_slice(&1024i32.to_le_bytes());
        let c = parse_kernel_environment(&b).unwrap();
        assert_eq!((c.use_generic_state_machine, c.exec_mode), (1, 2));
        assert_eq!(
            (c.min_threads, c.max_threads, c.min_teams, c.max_teams),
            (1, 256, -1, -1)
        );
        assert_eq!(
            (c.reduction_data_size, c.reduction_buffer_length),
            (8, 1024)
        );
        assert_eq!(reduction_buffer_bytes(&c), 8192);
        assert!(parse_kernel_environment(&b[..40]).is_none());
        let none = ConfigurationEnvironment {
            reduction_data_size: 8,
            reduction_buffer_length: 0,
            ..c
        };
        assert_eq!(reduction_buffer_bytes(&none), 0);
        let negative = ConfigurationEnvironment {
            reduction_data_size: -1,
            ..c
        };
        assert_eq!(reduction_buffer_bytes(&negative), 0);
    }

    #[test]
    fn table_is_sorted_deduplicated_and_flat() {
        let t = vec![
            FptrMapEntry {
                host: 30,
                device: 3,
            },
            FptrMapEntry {
                host: 10,
                device: 1,
            },
            FptrMapEntry {
                host: 20,
                device: 2,
            },
            FptrMapEntry {
                host: 10,
                device: 1,
            },
        ];
        let sorted = IndirectTable::new(t);
        assert_eq!(
            sorted.entries().iter().map(|e| e.host).collect::<Vec<_>>(),
            vec![10, 20, 30]
        );
        let block = sorted.block();
        let word = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().unwrap());
        assert_eq!(block.len(), 16 + 48);
        assert_eq!(word(0), 3, "the header's entry count");
        let b = IndirectTable::ENTRIES_OFFSET;
        assert_eq!([word(b), word(b + 8), word(b + 40)], [10, 1, 3]);
        assert_eq!(IndirectTable::default().block().len(), 16);
        // Present keys give the device address; any other key comes back as it was.
        assert_eq!([10, 20, 30].map(|h| sorted.translate(h)), [1, 2, 3]);
        assert_eq!(
            [0, 15, 31, u64::MAX].map(|h| sorted.translate(h)),
            [0, 15, 31, u64::MAX]
        );
        assert_eq!(IndirectTable::default().translate(10), 10);
    }
}
