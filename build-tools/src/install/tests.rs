//! The install layout, its configuration texts and the manifest, without a build.

use super::*;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "rustomp-install-test-{}-{name}",
        std::process::id()
    ));
    let _ = fs::remove_dir_all(&dir);
    dir
}

fn text(rel: &str, body: &str) -> Entry {
    Entry {
        rel: PathBuf::from(rel),
        content: Content::Text(body.to_string()),
    }
}

#[test]
fn prefix_is_absolute_clean_and_quotable() {
    assert_eq!(
        checked_prefix(Path::new("/tmp/./p/")).unwrap(),
        PathBuf::from("/tmp/p")
    );
    assert!(checked_prefix(Path::new("relative")).unwrap().is_absolute());
    for bad in [
        "/tmp/a b",
        "/tmp/a\\b",
        "/tmp/$x",
        "/tmp/../etc",
        "/",
        "/tmp/it's",
    ] {
        assert!(checked_prefix(Path::new(bad)).is_err(), "{bad}");
    }
}

#[test]
fn config_starts_with_fopenmp_and_wires_the_prefix() {
    let cfg = config_text(Path::new("/p"), true);
    let lines: Vec<&str> = cfg.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines[0], "-fopenmp");
    for want in [
        "--cuda-path=/p/cuda",
        "--libomptarget-nvptx-bc-path=/p/lib/libomptarget-nvptx.bc",
        "-Xoffload-linker-nvptx64-nvidia-cuda -L/p/lib/nvptx64-nvidia-cuda",
        "-Xoffload-linker-amdgcn-amd-amdhsa -L/p/lib/amdgcn-amd-amdhsa",
        "-Xopenmp-target=amdgcn-amd-amdhsa -nogpulib",
        "-Xarch_device -fpass-plugin=/p/lib/rustomp-indirect-calls.so",
        "-Xoffload-linker-nvptx64-nvidia-cuda --plugin-opt=-load-pass-plugin=/p/lib/rustomp-indirect-calls.so",
        "-Xoffload-linker-amdgcn-amd-amdhsa --load-pass-plugin=/p/lib/rustomp-indirect-calls.so",
        "-L/p/lib",
        "-Wl,-rpath,/p/lib",
    ] {
        assert!(lines.contains(&want), "{want} missing from\n{cfg}");
    }
    assert!(!config_text(Path::new("/p"), false).contains("--cuda-path"));
}

#[test]
fn flang_config_starts_with_fopenmp_and_wires_every_triple() {
    let cfg = flang_config_text(Path::new("/p"));
    let lines: Vec<&str> = cfg.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines[0], "-fopenmp");
    for want in [
        "-nogpulib",
        "-Xoffload-linker-x86_64-pc-linux-gnu -L/p/lib/x86_64-pc-linux-gnu",
        "-Xoffload-linker-x86_64-pc-linux-gnu -lompdevice",
        "-Xoffload-linker-nvptx64-nvidia-cuda -L/p/lib/nvptx64-nvidia-cuda",
        "-Xoffload-linker-nvptx64-nvidia-cuda -lompdevice",
        "-Xoffload-linker-amdgcn-amd-amdhsa -L/p/lib/amdgcn-amd-amdhsa",
        "-Xoffload-linker-amdgcn-amd-amdhsa -lompdevice",
        "-Wl,-rpath,/p/lib",
    ] {
        assert!(lines.contains(&want), "{want} missing from\n{cfg}");
    }
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("--cuda-path") || l.contains("-Xopenmp-target")),
        "flang-22 rejects both:\n{cfg}"
    );
}

#[test]
fn env_sets_path_and_the_override_once() {
    let env = env_text(Path::new("/p"), false);
    assert!(env.contains("RUSTOMP_PREFIX='/p'"));
    assert!(
        env.contains("_rustomp_edit='s/^-fopenmp(=libomp)?$/--config=/p/etc/rustomp/clang.cfg/'")
    );
    assert!(
        env.contains("_rustomp_edit='s/^-fopenmp(=libomp)?$/--config=/p/etc/rustomp/flang.cfg/'")
    );
    if util::which("sh").is_none() {
        return;
    }
    // Sourced twice, with an earlier silent edit: ours once, first, the other kept.
    let dir = temp("env");
    util::write(&dir.join("env.sh"), &env).unwrap();
    let out = Cmd::new("sh")
        .args(["-c", &format!(". {0}/env.sh; . {0}/env.sh; printf '%s\\n%s\\n%s\\n' \"$PATH\" \"$CCC_OVERRIDE_OPTIONS\" \"$FCC_OVERRIDE_OPTIONS\"", dir.display())])
        .env("PATH", "/usr/bin:/bin")
        .env("CCC_OVERRIDE_OPTIONS", "# x-Werror")
        .env_remove("FCC_OVERRIDE_OPTIONS")
        .output()
        .unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "/p/bin:/usr/bin:/bin");
    assert_eq!(
        lines[1],
        format!("# {} x-Werror", override_edit(Path::new("/p"), CONFIG))
    );
    assert_eq!(
        lines[2],
        format!("# {}", override_edit(Path::new("/p"), FLANG_CONFIG))
    );
    // With CUDA's tools, their bin directory goes on PATH too (for flang's ptxas), once.
    util::write(&dir.join("env.sh"), env_text(Path::new("/p"), true)).unwrap();
    let out = Cmd::new("sh")
        .args([
            "-c",
            &format!(
                ". {0}/env.sh; . {0}/env.sh; printf '%s\\n' \"$PATH\"",
                dir.display()
            ),
        ])
        .env("PATH", "/usr/bin:/bin")
        .output()
        .unwrap();
    assert_eq!(out.trim(), "/p/cuda/bin:/p/bin:/usr/bin:/bin");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn manifest_round_trips_and_refuses_paths_outside() {
    let m = Manifest {
        dirs: [".", "lib"].iter().map(PathBuf::from).collect(),
        files: ["lib/a.so", "env.sh"].iter().map(PathBuf::from).collect(),
    };
    assert_eq!(Manifest::parse(&m.render(), Path::new("m")).unwrap(), m);
    assert!(Manifest::parse("file ../etc/passwd\n", Path::new("m")).is_err());
    assert!(Manifest::parse("file /etc/passwd\n", Path::new("m")).is_err());
}

#[test]
fn install_reinstall_uninstall_touch_only_their_files() {
    let base = temp("cycle");
    let prefix = base.join("p");
    util::mkdirs(&base).unwrap();
    let m = lay_out(
        &prefix,
        &[
            text("env.sh", "1"),
            text("lib/x/a", "a"),
            text("lib/b", "b"),
        ],
    )
    .unwrap();
    assert!(m.dirs.contains(Path::new(".")) && m.dirs.contains(Path::new("lib/x")));
    // A file of the user's, and a reinstall without lib/x/a: a is removed, the rest replaced.
    util::write(&prefix.join("lib/mine"), "user").unwrap();
    lay_out(&prefix, &[text("env.sh", "2"), text("lib/b", "b2")]).unwrap();
    assert!(!prefix.join("lib/x/a").exists());
    assert_eq!(util::read(&prefix.join("env.sh")).unwrap(), "2");
    // A file the install would write but did not write before: refused, nothing changed.
    assert!(lay_out(&prefix, &[text("lib/mine", "ours")]).is_err());
    assert_eq!(util::read(&prefix.join("lib/mine")).unwrap(), "user");
    // Uninstall: everything of ours goes, lib stays for the user's file.
    let (removed, kept) = remove_listed(&prefix).unwrap();
    assert_eq!(removed, 2);
    assert_eq!(kept, [prefix.join("lib"), prefix.clone()]);
    assert!(prefix.join("lib/mine").is_file());
    assert!(
        !prefix.join(MANIFEST).exists()
            && !prefix.join("share").exists()
            && !prefix.join("lib/x").exists()
    );
    fs::remove_file(prefix.join("lib/mine")).unwrap();
    fs::remove_dir(prefix.join("lib")).unwrap();
    // A prefix that existed before the install stays, empty.
    lay_out(&prefix, &[text("env.sh", "1")]).unwrap();
    let m = Manifest::read(&prefix).unwrap().unwrap();
    assert!(
        !m.dirs.contains(Path::new(".")),
        "the prefix existed before this install"
    );
    remove_listed(&prefix).unwrap();
    assert!(prefix.is_dir() && fs::read_dir(&prefix).unwrap().next().is_none());
    assert!(
        remove_listed(&prefix).is_err(),
        "no manifest: nothing to do, said so"
    );
    // One the install created goes with it.
    fs::remove_dir(&prefix).unwrap();
    lay_out(&prefix, &[text("lib/a", "a")]).unwrap();
    remove_listed(&prefix).unwrap();
    assert!(!prefix.exists());
    fs::remove_dir_all(&base).unwrap();
}
