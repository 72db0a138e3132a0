"""Log signatures of NVIDIA driver containers (init or main) that cannot build or load the driver for the kernel."""
from .signature import Signature

# gpu-driver-container scripts (NVIDIA/gpu-driver-container ubuntu22.04/nvidia-driver, rhel9/nvidia-driver,
# */precompiled/nvidia-driver) and nvidia-installer; every line below ends the container with exit 1.
INIT = (
    # `_resolve_kernel_version`: no linux-headers package for `uname -r` in the distribution's repository
    # (NVIDIA/gpu-operator#85, #155 CentOS 7 kernel-ml, gpu-driver-container#601 custom kernels).
    Signature("driver-kernel-unresolved", "driver-kernel-mismatch", r"Could not resolve Linux kernel version",
              "no kernel headers package exists for the node's running kernel in the repositories the driver "
              "container can reach"),
    # Precompiled driver images install `linux-objects-nvidia-<branch>-server-<kernel>`; apt says
    # `E: Unable to locate package linux-objects-nvidia-535-server-5.10.0-23-amd64` (NVIDIA/gpu-operator#558);
    # dnf says `No match for argument: kernel-headers-<kernel>` / `Unable to find a match: kernel-devel-<kernel>`.
    Signature("driver-kernel-package", "driver-kernel-mismatch",
              r"(?:Unable to locate package|Couldn't find any package by (?:glob|regex)|has no installation candidate|"
              r"No match for argument:?|Unable to find a match:?)\W+'?(?:linux-(?:objects-nvidia|modules-nvidia|"
              r"signatures-nvidia|headers|image|modules)|kernel-(?:headers|devel|core))-\S*\d",
              "there is no driver or kernel package built for the node's kernel (precompiled driver images exist only "
              "for specific kernels)"),
    # Building against missing headers: `make[1]: *** /lib/modules/5.15.0-60-generic/build: No such file or
    # directory. Stop.` (NVIDIA/gpu-operator#583); nvidia-installer: `ERROR: Unable to find the kernel source tree
    # for the currently running kernel.`; `Could not locate Linux kernel version string`.
    Signature("driver-kernel-headers", "driver-kernel-mismatch",
              r"Unable to find the kernel source tree for the currently running kernel|"
              r"/lib/modules/[^/\s]+/build: No such file or directory|Could not locate Linux kernel version string|"
              r"[Kk]ernel headers? (?:for|of) \S+ (?:cannot be found|not found|are not installed)",
              "the kernel headers for the node's running kernel are missing"),
    # Building the module against the node's kernel fails: a kernel newer than the driver marks a symbol GPL-only
    # (`ERROR: modpost: GPL-incompatible module nvidia.ko uses GPL-only symbol 'rcu_read_unlock_strict'`, fixed in
    # driver >= 535.183.08, NVIDIA/gpu-operator#751), or drops/renames one (`modpost: "x" [.../nvidia.ko] undefined!`);
    # nvidia-installer's `ERROR: Unable to build the NVIDIA kernel module.` / `nvidia.ko failed to build!`; make stopping
    # in the driver's tree `make[1]: *** [_module_/usr/src/nvidia-418.40.04/kernel] Error 2` (NVIDIA/gpu-operator#18).
    Signature("driver-kernel-build", "driver-kernel-mismatch",
              r"(?:ERROR|FATAL): modpost: GPL-incompatible module nvidia\S*\.ko uses GPL-only symbol|"
              r"modpost: \"\S+\" \[\S*nvidia\S*\.ko\] undefined|Unable to build the NVIDIA kernel module|"
              r"nvidia\S*\.ko failed to build|make(?:\[\d+\])?: \*\*\* \[(?:_module_)?/usr/src/nvidia-[^\]]+\] Error \d+",
              "the NVIDIA kernel module does not build against the node's kernel (a kernel newer than this driver "
              "supports, or headers/compiler that do not match it)"),
    # The same build stopping in the kernel's modpost step: `make[2]: *** [/usr/src/linux-headers-6.5.0-41-generic/
    # Makefile:1991: modpost] Error 2` (NVIDIA/gpu-operator#751). Generic make wording: it counts only in the log of
    # an NVIDIA driver build (NVIDIA_BUILD_LOG), not in another out-of-tree module's (MOFED/DOCA, DKMS).
    Signature("driver-kernel-make", "driver-kernel-mismatch", r"make(?:\[\d+\])?: \*\*\* \[[^\]]*modpost\] Error \d+",
              "the NVIDIA kernel module does not build against the node's kernel (the kernel's modpost step failed)"),
    # Loading a module built for another kernel: `modprobe: FATAL: Module nvidia not found in directory
    # /lib/modules/<kernel>`, `insmod: ERROR: could not insert module nvidia.ko: Invalid module format`,
    # `nvidia: disagrees about version of symbol module_layout`, `version magic '…' should be '…'`.
    Signature("driver-kernel-module", "driver-kernel-mismatch",
              r"modprobe: FATAL: Module nvidia\S* not found in directory /lib/modules/\S+|Invalid module format|"
              r"disagrees about version of symbol|version magic '[^']+' should be '[^']+'",
              "the NVIDIA kernel module on hand was built for a different kernel than the one the node runs"),
)

# A log that is an NVIDIA driver build (gpu-driver-container / nvidia-installer wording).
NVIDIA_BUILD_LOG = r"NVIDIA Software Installer|(?:Compiling|Installing) NVIDIA driver|nvidia\S*\.ko\b|/usr/src/nvidia-"
