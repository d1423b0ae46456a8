//! Picking the same device on both sides, and pytest's `-k`.

use serde::Deserialize;

/// One device a side lists (from `dpctl.get_devices()`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Listed {
    /// The SYCL backend (`opencl`, `level_zero`, ...).
    pub backend: String,
    /// The platform's name.
    pub platform: String,
    /// The device's name.
    pub name: String,
    /// Whether it has USM device and host allocations (SYCL's
    /// `usm_device_allocations` and `usm_host_allocations` aspects); `None`
    /// when the listing did not say (the listing through the UR loader).
    #[serde(default)]
    pub usm: Option<bool>,
}

/// Short names for `--device`: the text they look for in
/// "platform / device name".
const DEVICE_ALIASES: [(&str, &str); 3] = [
    ("intel", "Intel(R) OpenCL /"),
    ("pocl", "Portable Computing Language /"),
    ("rusticl", "rusticl /"),
];

/// Picks the device `choice` names among `devices`: an alias of
/// [`DEVICE_ALIASES`] or any text of "platform / device name" (case
/// ignored), optionally `#K` for the K-th match (from 0). Returns the
/// selector that picks it alone, `*:N` with N its index among the devices
/// of its backend, and its position in `devices`.
pub fn pick_device(devices: &[Listed], choice: &str) -> std::result::Result<(String, usize), String> {
    let (what, nth) = match choice.rsplit_once('#') {
        Some((w, k)) => (
            w,
            k.parse::<usize>()
                .map_err(|_| format!("`{choice}`: `#{k}` is not a number"))?,
        ),
        None => (choice, 0),
    };
    let needle = DEVICE_ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(what))
        .map_or(what, |(_, text)| text)
        .to_lowercase();
    let pos = devices
        .iter()
        .enumerate()
        .filter(|(_, d)| format!("{} / {}", d.platform, d.name).to_lowercase().contains(&needle))
        .map(|(i, _)| i)
        .nth(nth)
        .ok_or_else(|| {
            let seen: Vec<String> = devices.iter().map(|d| format!("{} / {}", d.platform, d.name)).collect();
            format!("no device matches `{choice}` among [{}]", seen.join("; "))
        })?;
    let backend = &devices[pos].backend;
    let index = devices[..pos].iter().filter(|d| &d.backend == backend).count();
    Ok((format!("*:{index}"), pos))
}

/// Adds `not <test>` for each deselected test to a `-k` expression.
pub fn k_expression(user: Option<&str>, deselect: &[&str]) -> Option<String> {
    let mut parts: Vec<String> = user.map(|k| format!("({k})")).into_iter().collect();
    parts.extend(deselect.iter().map(|t| format!("not {t}")));
    (!parts.is_empty()).then(|| parts.join(" and "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(backend: &str, platform: &str, name: &str) -> Listed {
        Listed {
            backend: backend.into(),
            platform: platform.into(),
            name: name.into(),
            usm: None,
        }
    }

    #[test]
    fn the_same_device_gets_each_sides_own_index() {
        let pocl = "Portable Computing Language";
        let ur = [
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", "Intel(R) OpenCL", "AMD EPYC"),
        ];
        let ours = [
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", pocl, "pthread-haswell-AMD EPYC"),
            dev("opencl", "rusticl", "llvmpipe (LLVM 15.0.6, 256 bits)"),
            dev("opencl", "Intel(R) OpenCL", "AMD EPYC"),
        ];
        assert_eq!(pick_device(&ur, "intel").unwrap(), ("*:2".into(), 2));
        assert_eq!(pick_device(&ours, "intel").unwrap(), ("*:3".into(), 3));
        assert_eq!(pick_device(&ours, "pocl#1").unwrap(), ("*:1".into(), 1));
        assert_eq!(pick_device(&ours, "RUSTICL").unwrap(), ("*:2".into(), 2));
        assert_eq!(pick_device(&ours, "llvmpipe").unwrap().0, "*:2");
        assert!(pick_device(&ur, "rusticl").unwrap_err().contains("no device matches"));
        assert!(pick_device(&ur, "pocl#x").is_err());
    }

    #[test]
    fn the_index_counts_only_the_devices_of_the_chosen_backend() {
        let devices = [
            dev("level_zero", "L0", "gpu"),
            dev("opencl", "Portable Computing Language", "p"),
            dev("opencl", "Intel(R) OpenCL", "cpu"),
        ];
        assert_eq!(pick_device(&devices, "intel").unwrap(), ("*:1".into(), 2));
    }

    #[test]
    fn k_expressions_keep_the_users_and_add_deselections() {
        assert_eq!(k_expression(None, &[]), None);
        assert_eq!(k_expression(Some("float32"), &[]).unwrap(), "(float32)");
        assert_eq!(
            k_expression(Some("a or b"), &["x", "y"]).unwrap(),
            "(a or b) and not x and not y"
        );
        assert_eq!(k_expression(None, &["x"]).unwrap(), "not x");
    }
}
