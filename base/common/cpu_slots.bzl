"""The CPU-slot flag every multi-threaded build action passes its tool: the directory of the machine-wide slot
locks (base/common/cpu_slots.h), so that all actions share one set of slots."""

CPU_SLOT_FLAG = "--cpu_slot_dir=/tmp/sparse_layers_cpu_slots"
