/**
 * CPU time spent while a benchmark step runs: by the whole machine (every process: the service, the
 * database server, anvil; from /proc/stat, Linux only) and by this process. Work that takes C
 * CPU-seconds cannot finish in under C ÷ cores seconds however it is scheduled, so this turns
 * "could a better overlap reach the target?" into a number.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export interface CpuSpent {
  /** CPU-seconds used by every process on the machine; null where /proc/stat is missing. */
  machine: number | null;
  /** CPU-seconds used by this process (all its threads). */
  process: number;
  cores: number;
}

/** Busy and total jiffies of the aggregate "cpu" line of /proc/stat. */
function machineJiffies(): { busy: number; total: number } | null {
  if (!existsSync('/proc/stat')) return null;
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1, 9) // user nice system idle iowait irq softirq steal (guest time is inside user)
    .map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

/** Starts a meter; calling the result gives the CPU spent since. */
export function startCpuMeter(): () => CpuSpent {
  const m0 = machineJiffies();
  const p0 = process.cpuUsage();
  return () => {
    const m1 = machineJiffies();
    const p = process.cpuUsage(p0);
    // USER_HZ is 100 on every Linux this runs on (sysconf(_SC_CLK_TCK)).
    const machine = m0 && m1 ? (m1.busy - m0.busy) / 100 : null;
    return { machine, process: (p.user + p.system) / 1e6, cores: availableParallelism() };
  };
}

/** CPU-seconds (user + system, all threads) process `pid` has used so far, from /proc (Linux). */
export function processCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces), from field 3: utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/**
 * CPU-seconds used so far by every live process whose command is `command` (`postgres`: the
 * server and each connection's backend). A backend that exits between two readings takes its
 * time with it, so measure across steps that keep their connections (a pool).
 */
export function commandCpuSeconds(command: string): number {
  if (!existsSync('/proc/self/stat')) return 0;
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== command) continue;
      total += processCpuSeconds(Number(entry));
    } catch {
      // The process exited between the listing and the reading.
    }
  }
  return total;
}
