//! The parameters each kernel of an image declares, read off the image itself, so that a launch
//! whose arguments disagree with them is refused before a driver reads past what the host
//! passed (a real driver given too few `kernelParams` reads beyond the array and the host
//! process dies of SIGSEGV inside `cuLaunchKernel`).
//!
//! - cubin: the `.nv.info.<kernel>` section's attribute records. Each record is a format byte,
//!   an attribute byte and, for the sized format, a 16-bit length and that many bytes; one
//!   `EIATTR_KPARAM_INFO` record per parameter (ordinal, offset, size) and
//!   `EIATTR_CBANK_PARAM_SIZE` with the bytes of the whole parameter block.
//! - PTX: the `.param` declarations between the parentheses of each `.entry`.
//! - AMDGPU code object: the `.args` of each kernel in the `NT_AMDGPU_METADATA` note
//!   (MessagePack), without the `hidden_*` implicit arguments.
//!
//! Fatbinaries are opaque here; the driver's own answer (`cuFuncGetParamInfo`) covers them.

use super::ImageKind;
use object::elf::{FileHeader64, SHT_NOTE};
use object::read::elf::{FileHeader as _, SectionHeader as _};
use object::LittleEndian as LE;
use std::collections::HashMap;

/// What a kernel declares: how many parameters, and the bytes of its parameter block (the end
/// of the last one). clang-22's OpenMP kernels take 8-byte parameters only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelParameters {
    pub count: usize,
    pub bytes: usize,
}

/// Every kernel's parameters the image states, by kernel name (empty when it states none or is
/// malformed: absence of facts, never an error).
pub fn kernel_parameters(bytes: &[u8], kind: &ImageKind) -> HashMap<String, KernelParameters> {
    match kind {
        ImageKind::Cubin { .. } => cubin_parameters(bytes).unwrap_or_default(),
        ImageKind::Ptx { .. } => ptx_parameters(&String::from_utf8_lossy(bytes)),
        ImageKind::AmdgpuCodeObject { .. } => amdgpu_parameters(bytes).unwrap_or_default(),
        _ => HashMap::new(),
    }
}

/// `.nv.info` record formats: no value, a byte, a half word, sized data.
const EIFMT_NVAL: u8 = 1;
const EIFMT_BVAL: u8 = 2;
const EIFMT_HVAL: u8 = 3;
const EIFMT_SVAL: u8 = 4;
/// One per parameter: `u32` index, `u16` ordinal, `u16` offset, `u32` with the size in bits 18..32.
const EIATTR_KPARAM_INFO: u8 = 0x17;
/// The parameter block's size in bytes (half word).
const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
const NV_INFO_PREFIX: &[u8] = b".nv.info.";

fn cubin_parameters(bytes: &[u8]) -> Option<HashMap<String, KernelParameters>> {
    let header = FileHeader64::<LE>::parse(bytes).ok()?;
    let sections = header.sections(LE, bytes).ok()?;
    let mut found = HashMap::new();
    for section in sections.iter() {
        let Ok(name) = sections.section_name(LE, section) else {
            continue;
        };
        let Some(kernel) = name.strip_prefix(NV_INFO_PREFIX) else {
            continue;
        };
        let Ok(records) = section.data(LE, bytes) else {
            continue;
        };
        if let Some(parameters) = nv_info_parameters(records) {
            found.insert(String::from_utf8_lossy(kernel).into_owned(), parameters);
        }
    }
    Some(found)
}

/// The parameters one `.nv.info.<kernel>` section states; `None` when it states none or a
/// record runs past the section.
fn nv_info_parameters(records: &[u8]) -> Option<KernelParameters> {
    let (mut count, mut end, mut block) = (0usize, 0usize, None);
    let mut at = 0usize;
    while at + 4 <= records.len() {
        let (format, attribute) = (records[at], records[at + 1]);
        let half = u16::from_le_bytes([records[at + 2], records[at + 3]]);
        at += 4;
        match format {
            EIFMT_NVAL | EIFMT_BVAL => {}
            EIFMT_HVAL if attribute == EIATTR_CBANK_PARAM_SIZE => block = Some(usize::from(half)),
            EIFMT_HVAL => {}
            EIFMT_SVAL => {
                let data = records.get(at..at + usize::from(half))?;
                at += usize::from(half);
                if attribute == EIATTR_KPARAM_INFO && data.len() >= 12 {
                    let ordinal = usize::from(u16::from_le_bytes([data[4], data[5]]));
                    let offset = usize::from(u16::from_le_bytes([data[6], data[7]]));
                    let packed = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
                    let size = (packed >> 18) as usize;
                    count = count.max(ordinal + 1);
                    end = end.max(offset + size);
                }
            }
            _ => return None,
        }
    }
    (count > 0 || block.is_some()).then(|| KernelParameters {
        count,
        bytes: block.unwrap_or(end),
    })
}

/// Each `.entry NAME( .param ..., .param ... )` of PTX text: its parameters, 8 bytes each
/// unless the declaration says `.u32`/`.b32`/`.s32`/`.f32` (4) or an `.align N .b8 x[K]` array.
fn ptx_parameters(text: &str) -> HashMap<String, KernelParameters> {
    let mut found = HashMap::new();
    let mut rest = text;
    while let Some(at) = rest.find(".entry") {
        rest = &rest[at + ".entry".len()..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|&c| c.is_ascii_alphanumeric() || "_$.".contains(c))
            .collect();
        let (open, brace) = (rest.find('('), rest.find('{'));
        // A kernel without parameters has no list: `.entry f {` or `.entry f .maxntid ... {`.
        let Some(open) = open.filter(|&open| brace.is_none_or(|brace| open < brace)) else {
            if !name.is_empty() {
                found.insert(name, KernelParameters { count: 0, bytes: 0 });
            }
            continue;
        };
        let Some(close) = rest[open..].find(')') else {
            break;
        };
        let list = &rest[open + 1..open + close];
        let mut parameters = KernelParameters { count: 0, bytes: 0 };
        for declaration in list.split(',').filter(|d| d.contains(".param")) {
            let size = ptx_parameter_bytes(declaration);
            parameters.bytes = parameters.bytes.next_multiple_of(size.clamp(1, 8)) + size;
            parameters.count += 1;
        }
        found.insert(name, parameters);
        rest = &rest[open + close..];
    }
    found
}

fn ptx_parameter_bytes(declaration: &str) -> usize {
    if let (Some(open), Some(close)) = (declaration.find('['), declaration.find(']')) {
        let elements: usize = declaration[open + 1..close].trim().parse().unwrap_or(1);
        let element = if declaration.contains(".b8") || declaration.contains(".u8") {
            1
        } else {
            8
        };
        return elements * element;
    }
    for (width, bytes) in [("16", 2), ("32", 4), ("64", 8), ("8", 1)] {
        if [".u", ".s", ".b", ".f"]
            .iter()
            .any(|t| declaration.contains(&format!("{t}{width} ")))
        {
            return bytes;
        }
    }
    8
}

/// `NT_AMDGPU_METADATA`: the code object's MessagePack metadata, in a note owned by "AMDGPU".
const NT_AMDGPU_METADATA: u32 = 32;

fn amdgpu_parameters(bytes: &[u8]) -> Option<HashMap<String, KernelParameters>> {
    let header = FileHeader64::<LE>::parse(bytes).ok()?;
    let sections = header.sections(LE, bytes).ok()?;
    for section in sections.iter().filter(|s| s.sh_type(LE) == SHT_NOTE) {
        let Ok(Some(mut notes)) = section.notes(LE, bytes) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"AMDGPU" && note.n_type(LE).0 == NT_AMDGPU_METADATA {
                return amdgpu_metadata_parameters(note.desc());
            }
        }
    }
    None
}

/// The kernels of the metadata map (`amdhsa.kernels`), each with its explicit arguments.
fn amdgpu_metadata_parameters(metadata: &[u8]) -> Option<HashMap<String, KernelParameters>> {
    let root = msgpack::Reader::new(metadata).value()?;
    let kernels = root.get("amdhsa.kernels")?.as_array()?;
    let mut found = HashMap::new();
    for kernel in kernels {
        let Some(name) = kernel.get(".name").and_then(|n| n.as_str()) else {
            continue;
        };
        let mut parameters = KernelParameters { count: 0, bytes: 0 };
        for argument in kernel
            .get(".args")
            .and_then(|a| a.as_array())
            .unwrap_or(&[])
        {
            let kind = argument
                .get(".value_kind")
                .and_then(|k| k.as_str())
                .unwrap_or("");
            if kind.starts_with("hidden_") {
                continue;
            }
            let offset = argument
                .get(".offset")
                .and_then(|o| o.as_uint())
                .unwrap_or(0) as usize;
            let size = argument.get(".size").and_then(|s| s.as_uint()).unwrap_or(0) as usize;
            parameters.count += 1;
            parameters.bytes = parameters.bytes.max(offset + size);
        }
        found.insert(name.to_string(), parameters);
    }
    Some(found)
}

/// Just enough MessagePack to read AMDGPU code-object metadata: maps, arrays, strings, integers,
/// booleans, nil and binary (skipped), bounds-checked, with a nesting limit.
mod msgpack {
    #[derive(Debug, Clone, PartialEq)]
    pub enum Value<'a> {
        Nil,
        Bool(bool),
        Int(i64),
        Uint(u64),
        Str(&'a str),
        Bytes,
        Float,
        Array(Vec<Value<'a>>),
        Map(Vec<(Value<'a>, Value<'a>)>),
    }

    impl<'a> Value<'a> {
        pub fn get(&self, key: &str) -> Option<&Value<'a>> {
            match self {
                Value::Map(entries) => entries
                    .iter()
                    .find(|(k, _)| matches!(k, Value::Str(s) if *s == key))
                    .map(|(_, v)| v),
                _ => None,
            }
        }
        pub fn as_array(&self) -> Option<&[Value<'a>]> {
            match self {
                Value::Array(items) => Some(items),
                _ => None,
            }
        }
        pub fn as_str(&self) -> Option<&'a str> {
            match self {
                Value::Str(s) => Some(s),
                _ => None,
            }
        }
        pub fn as_uint(&self) -> Option<u64> {
            match *self {
                Value::Uint(u) => Some(u),
                Value::Int(i) => u64::try_from(i).ok(),
                _ => None,
            }
        }
    }

    pub struct Reader<'a> {
        bytes: &'a [u8],
        at: usize,
        depth: u32,
    }

    /// Metadata nests maps and arrays a few levels deep; anything deeper is not metadata.
    const MAX_DEPTH: u32 = 16;

    impl<'a> Reader<'a> {
        pub fn new(bytes: &'a [u8]) -> Self {
            Self {
                bytes,
                at: 0,
                depth: 0,
            }
        }

        fn take(&mut self, n: usize) -> Option<&'a [u8]> {
            let taken = self.bytes.get(self.at..self.at.checked_add(n)?)?;
            self.at += n;
            Some(taken)
        }

        fn uint(&mut self, n: usize) -> Option<u64> {
            Some(
                self.take(n)?
                    .iter()
                    .fold(0u64, |v, &b| v << 8 | u64::from(b)),
            )
        }

        fn int(&mut self, n: usize) -> Option<i64> {
            let raw = self.uint(n)?;
            let shift = 64 - 8 * n as u32;
            Some(((raw << shift) as i64) >> shift)
        }

        fn str(&mut self, n: usize) -> Option<Value<'a>> {
            Some(Value::Str(core::str::from_utf8(self.take(n)?).ok()?))
        }

        fn array(&mut self, n: usize) -> Option<Value<'a>> {
            // Every element takes at least a byte: a count beyond the input is malformed.
            if n > self.bytes.len() - self.at {
                return None;
            }
            (0..n)
                .map(|_| self.value())
                .collect::<Option<_>>()
                .map(Value::Array)
        }

        fn map(&mut self, n: usize) -> Option<Value<'a>> {
            if n > (self.bytes.len() - self.at) / 2 {
                return None;
            }
            (0..n)
                .map(|_| Some((self.value()?, self.value()?)))
                .collect::<Option<_>>()
                .map(Value::Map)
        }

        pub fn value(&mut self) -> Option<Value<'a>> {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return None;
            }
            let tag = *self.take(1)?.first()?;
            let value = match tag {
                0x00..=0x7f => Value::Uint(u64::from(tag)),
                0x80..=0x8f => self.map(usize::from(tag & 0x0f))?,
                0x90..=0x9f => self.array(usize::from(tag & 0x0f))?,
                0xa0..=0xbf => self.str(usize::from(tag & 0x1f))?,
                0xc0 => Value::Nil,
                0xc2 => Value::Bool(false),
                0xc3 => Value::Bool(true),
                0xc4..=0xc6 => {
                    let n = self.uint(1 << (tag - 0xc4))? as usize;
                    self.take(n)?;
                    Value::Bytes
                }
                0xca => {
                    self.take(4)?;
                    Value::Float
                }
                0xcb => {
                    self.take(8)?;
                    Value::Float
                }
                0xcc..=0xcf => Value::Uint(self.uint(1 << (tag - 0xcc))?),
                0xd0..=0xd3 => Value::Int(self.int(1 << (tag - 0xd0))?),
                0xd9..=0xdb => {
                    let n = self.uint(1 << (tag - 0xd9))? as usize;
                    self.str(n)?
                }
                0xdc | 0xdd => {
                    let n = self.uint(2 << (tag - 0xdc))? as usize;
                    self.array(n)?
                }
                0xde | 0xdf => {
                    let n = self.uint(2 << (tag - 0xde))? as usize;
                    self.map(n)?
                }
                0xe0..=0xff => Value::Int(i64::from(tag as i8)),
                // ext types and the unused 0xc1: not in code-object metadata.
                _ => return None,
            };
            self.depth -= 1;
            Some(value)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One `.nv.info.<kernel>` as ptxas 13 wrote it for a kernel of 8 parameters (64 bytes),
    /// abridged: a byte value, a half word, the parameter bank, its size, and the parameters.
    fn nv_info(parameters: u16) -> Vec<u8> {
        let mut records = vec![0x02, 0x6d, 0x00, 0x00, 0x03, 0x6b, 0x01, 0x00];
        records.extend([
            0x04, 0x0a, 0x08, 0x00, 0x29, 0, 0, 0, 0x10, 0x02, 0x40, 0x00,
        ]);
        records.extend([0x03, 0x19]);
        records.extend((8 * parameters).to_le_bytes());
        for ordinal in 0..parameters {
            records.extend([0x04, 0x17, 0x0c, 0x00, 0, 0, 0, 0]);
            records.extend(ordinal.to_le_bytes());
            records.extend((8 * ordinal).to_le_bytes());
            records.extend(0x0021_f502u32.to_le_bytes());
        }
        records.extend([0x04, 0x37, 0x04, 0x00, 0x87, 0, 0, 0]);
        records
    }

    #[test]
    fn nv_info_records_give_count_and_bytes() {
        assert_eq!(
            nv_info_parameters(&nv_info(8)),
            Some(KernelParameters {
                count: 8,
                bytes: 64
            })
        );
        assert_eq!(
            nv_info_parameters(&nv_info(1)),
            Some(KernelParameters { count: 1, bytes: 8 })
        );
        // A sized record that runs past the section: no facts rather than wrong ones.
        let mut cut = nv_info(3);
        cut.truncate(cut.len() - 8 - 6);
        assert_eq!(nv_info_parameters(&cut), None);
        assert_eq!(nv_info_parameters(&[]), None);
    }

    /// What ptxas and lld wrote for `tests/fixtures/kernels.c` (README there): `main_l7` takes
    /// the launch environment and three captures, `main_l9` the environment and one; the
    /// numbers were read with `cuobjdump -elf` and `llvm-readelf --notes`.
    const FIXTURE_L7: &str = "__omp_offloading_fe00_51c003_main_l7";
    const FIXTURE_L9: &str = "__omp_offloading_fe00_51c003_main_l9";

    #[test]
    fn a_real_cubin_states_each_kernels_parameters() {
        let cubin = include_bytes!("../../tests/fixtures/kernels.sm_90.cubin");
        let found = kernel_parameters(cubin, &ImageKind::Cubin { sm: 90 });
        assert_eq!(
            found[FIXTURE_L7],
            KernelParameters {
                count: 4,
                bytes: 32
            }
        );
        assert_eq!(
            found[FIXTURE_L9],
            KernelParameters {
                count: 2,
                bytes: 16
            }
        );
        // Device functions have `.nv.info` sections too, without parameters: not kernels.
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn real_amdgpu_metadata_states_each_kernels_explicit_arguments() {
        let metadata = include_bytes!("../../tests/fixtures/kernels.gfx90a.metadata.msgpack");
        let found = amdgpu_metadata_parameters(metadata).expect("lld's metadata parses");
        assert_eq!(
            found[FIXTURE_L7],
            KernelParameters {
                count: 4,
                bytes: 32
            }
        );
        assert_eq!(
            found[FIXTURE_L9],
            KernelParameters {
                count: 2,
                bytes: 16
            }
        );
    }

    #[test]
    fn ptx_entries_give_their_parameters() {
        let ptx = "
.weak .entry __omp_offloading_fe00_1_main_l5(
	.param .u64 .ptr .align 1 __omp_offloading_fe00_1_main_l5_param_0,
	.param .u64 .ptr .align 4 __omp_offloading_fe00_1_main_l5_param_1,
	.param .u64 __omp_offloading_fe00_1_main_l5_param_2
)
.maxntid 128, 1, 1
{ ret; }
.visible .entry nvptx$device$init()
{ ret; }
.visible .entry bare .maxntid 1 { ret; }
";
        let found = ptx_parameters(ptx);
        assert_eq!(
            found["__omp_offloading_fe00_1_main_l5"],
            KernelParameters {
                count: 3,
                bytes: 24
            }
        );
        assert_eq!(
            found["nvptx$device$init"],
            KernelParameters { count: 0, bytes: 0 }
        );
        assert_eq!(found["bare"], KernelParameters { count: 0, bytes: 0 });
    }

    #[test]
    fn amdgpu_metadata_counts_explicit_arguments_only() {
        // {"amdhsa.kernels": [{".name": "k", ".args": [{".offset":0,".size":8,".value_kind":"global_buffer"},
        //   {".offset":8,".size":8,".value_kind":"by_value"}, {".offset":16,".size":4,".value_kind":"hidden_block_count_x"}]}]}
        let mut m = vec![0x81];
        let s = |m: &mut Vec<u8>, t: &str| {
            m.push(0xa0 | t.len() as u8);
            m.extend(t.as_bytes());
        };
        let long = |m: &mut Vec<u8>, t: &str| {
            m.push(0xd9);
            m.push(t.len() as u8);
            m.extend(t.as_bytes());
        };
        s(&mut m, "amdhsa.kernels");
        m.push(0x91);
        m.push(0x82);
        s(&mut m, ".name");
        s(&mut m, "k");
        s(&mut m, ".args");
        m.push(0x93);
        for (offset, size, kind) in [
            (0u8, 8u8, "global_buffer"),
            (8, 8, "by_value"),
            (16, 4, "hidden_block_count_x"),
        ] {
            m.push(0x83);
            s(&mut m, ".offset");
            m.extend([0xcc, offset]);
            s(&mut m, ".size");
            m.push(size);
            s(&mut m, ".value_kind");
            long(&mut m, kind);
        }
        let found = amdgpu_metadata_parameters(&m).expect("well-formed metadata");
        assert_eq!(
            found["k"],
            KernelParameters {
                count: 2,
                bytes: 16
            }
        );
        // Truncated or absurd input: nothing, no panic.
        for cut in 0..m.len() {
            let _ = amdgpu_metadata_parameters(&m[..cut]);
        }
        assert_eq!(
            amdgpu_metadata_parameters(&[0xdd, 0xff, 0xff, 0xff, 0xff]),
            None
        );
    }
}
