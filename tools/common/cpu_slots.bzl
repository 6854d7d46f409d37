"""The CPU-slot flag every multi-threaded build action passes its tool: the directory of the machine-wide slot
locks (tools/common/cpu_slots.h), one place for the path that actions and tests share."""

CPU_SLOT_DIR = "/tmp/sparse_layers_cpu_slots"

CPU_SLOT_FLAG = "--cpu_slot_dir=" + CPU_SLOT_DIR
