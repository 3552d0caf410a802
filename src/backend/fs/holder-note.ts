import * as fs from "node:fs";
import { readFile } from "node:fs/promises";

/**
 * `events.holder`: who holds a session's lock (docs/ARCHITECTURE.md, "Lock lease"). The first line is the
 * holder's pid (all a waiter's `onLockWait` shows); the second, where the system tells, says which process that
 * pid was and which lock folder it took, so that a waiter can tell, without waiting `lockStaleMs`, that the
 * lock it finds belongs to a process that is gone:
 * - `start`: the process's start time (field 22 of `/proc/<pid>/stat`, in clock ticks since boot): a pid
 *   reused by a later process has another one;
 * - `boot` (`/proc/sys/kernel/random/boot_id`) and `pidNamespace` (`/proc/self/ns/pid`): a pid means the
 *   same process only on the same boot of the same machine and in the same PID namespace (a container has
 *   its own), so a note from anywhere else is not judged;
 * - `lock`: the lock folder's device, inode and birth time (see {@link folderKey}), so a note an earlier holder
 *   left (it was killed before it wrote its own, or lost its lock) is never taken for the current holder's.
 */
export interface HolderNote {
  pid: number;
  identity?: { start: string; boot: string; pidNamespace: string; lock: string } | undefined;
}

export const holderPath = (file: string) => `${file.replace(/\.jsonl$/, "")}.holder`;

/**
 * What tells one lock folder from any other that was ever at its path: device, inode and birth time. The inode
 * alone does not: a folder made right after one was removed often gets the same inode number (seen on ext4).
 * Undefined where the file system keeps no birth time: a note then names no folder, and is never judged.
 */
export function folderKey(info: fs.BigIntStats): string | undefined {
  return info.birthtimeNs > 0n ? `${info.dev}:${info.ino}:${info.birthtimeNs}` : undefined;
}

/** The note for this process holding the lock folder `lock` (its {@link folderKey}). */
export async function writeHolderNote(file: string, lock: string | undefined): Promise<void> {
  const self = thisProcess();
  const identity = self && lock ? { ...self, lock } : undefined;
  // One synchronous write of a few bytes: three round trips through the thread pool cost more than the call.
  fs.writeFileSync(holderPath(file), `${process.pid}\n${identity ? `${JSON.stringify(identity)}\n` : ""}`);
}

/** Removes the note, if it is there: one synchronous unlink, where `rm` made three round trips through the pool. */
export function removeHolderNote(file: string): void {
  try {
    fs.unlinkSync(holderPath(file));
  } catch {
    // gone already, or the folder with it: a note is only for a waiter to read
  }
}

/** The note as written, or undefined when there is none or its first line is no pid. */
export async function readHolderNote(file: string): Promise<HolderNote | undefined> {
  const text = await readFile(holderPath(file), "utf8").catch(() => "");
  const [first = "", second = ""] = text.split("\n");
  const pid = Number(first);
  if (!/^\d+$/.test(first) || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  return { pid, identity: parseIdentity(second) };
}

function parseIdentity(line: string): HolderNote["identity"] {
  try {
    const { start, boot, pidNamespace, lock } = JSON.parse(line) as Record<string, unknown>;
    if ([start, boot, pidNamespace, lock].every((value) => typeof value === "string" && value !== "")) {
      return { start, boot, pidNamespace, lock } as NonNullable<HolderNote["identity"]>;
    }
  } catch {
    // an older note (the pid alone), or one cut short: no identity, so nothing is judged from it
  }
  return undefined;
}

/**
 * Whether the note's process is certainly gone: it names `lock` (the key of the folder now at the lock's path), was
 * written on this boot in this PID namespace, and its pid now runs no process, or a zombie, or a process that
 * started at another time (the pid was reused). Anything not known for sure (no /proc, an unreadable
 * `/proc/<pid>/stat` of a live pid, a note without identity) is "not gone": the lock then goes stale as before.
 */
export function holderIsGone(note: HolderNote, lock: string | undefined): boolean {
  const self = thisProcess();
  const recorded = note.identity;
  if (!self || !recorded || !lock) return false;
  if (recorded.lock !== lock) return false;
  if (recorded.boot !== self.boot || recorded.pidNamespace !== self.pidNamespace) return false;
  if (!signalable(note.pid)) return true;
  const now = processStat(note.pid);
  if (!now) return false;
  return now.state === "Z" || now.state === "X" || now.start !== recorded.start;
}

/** Whether `kill(pid, 0)` finds a process (EPERM: one of another user's, alive all the same). */
export function signalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

let self: { start: string; boot: string; pidNamespace: string } | null | undefined;

/** This process's identity as a note records it, or null where the system does not tell it (no /proc). */
function thisProcess(): { start: string; boot: string; pidNamespace: string } | null {
  if (self !== undefined) return self;
  try {
    const start = processStat(process.pid)?.start;
    const boot = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const pidNamespace = fs.readlinkSync("/proc/self/ns/pid");
    self = start && boot && pidNamespace ? { start, boot, pidNamespace } : null;
  } catch {
    self = null;
  }
  return self;
}

/** A process's state letter and start time from `/proc/<pid>/stat`, or undefined when it cannot be read. */
function processStat(pid: number): { state: string; start: string } | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid …": comm may hold spaces and parentheses, so fields are counted after the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  const start = fields[19]; // field 22 of the line, the 20th after comm
  return state && start && /^\d+$/.test(start) ? { state, start } : undefined;
}
