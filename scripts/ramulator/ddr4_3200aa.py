"""Ramulator 2.1 configuration of the DRAM anchor (scripts/ramulator_validate.py, docs/timing.md).

One channel of DDR4-3200AA (22-22-22, tCK 0.625 ns) with one rank of 8 Gb x8 devices (8 GiB,
4 bank groups x 4 banks, 8 KiB rows), Ramulator's generic DDR controller with its defaults
(32-entry read and write queues, write drain between 20 % and 80 % write-queue occupancy),
FR-FCFS, open-row policy, all-bank refresh, and the RoBaRaCoCh address mapping (from the least
significant bit: 64-byte offset, column, rank, bank group, bank, row).

The frontend is ``External``: the driver (scripts/ramulator/xlat_dram_driver.cpp) sends the
requests and ticks the memory system itself, once per DRAM clock (1600 MHz). The clock ratios
13 : 8 only record 2600 MHz core : 1600 MHz DRAM; the driver does not use them.

Export it with Ramulator's own Python package (the YAML is what the driver reads; the exported
file is committed beside this one as ``ddr4_3200aa.yaml``)::

    PYTHONPATH=<ramulator2>/python python3 -m ramulator export ddr4_3200aa.py -o ddr4_3200aa.yaml
"""

import ramulator

frontend = ramulator.frontend.External(clock_ratio=13)
dram = ramulator.dram.DDR4(org_preset="DDR4_8Gb_x8", timing_preset="DDR4_3200AA", rank=1)
ctrl = ramulator.controller.GenericDDR(
    dram=dram,
    scheduler=ramulator.scheduler.FRFCFS(),
    refresh_manager=ramulator.refresh_manager.AllBank(),
    row_policy=ramulator.row_policy.Open(),
    addr_mapper=ramulator.addr_mapper.RoBaRaCoCh(),
)
mem = ramulator.memory_system.GenericDRAM(
    clock_ratio=8,
    controllers=[ctrl],
    channel_mapper=ramulator.channel_mapper.CacheLineInterleave(),
)
sim = ramulator.Simulation(frontend, mem)
