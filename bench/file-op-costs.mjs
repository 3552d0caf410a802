// What one file costs the file system when a rewind or git writes it (docs/benchmarks.md, "What the misses mean"):
// a new file made (a new inode), the same file written over by a temp and a rename (a rewind's way, atomic), by an
// unlink and a create (git's way), and a bare lstat for scale. Synchronous calls, so only the system calls count.
// Run: node bench/file-op-costs.mjs [folder] (the default: the OS temp folder). On a shared virtual disk the costs
// move by several times with what the disk did just before (a large removal's discards): compare within a round.
import { execSync } from "node:child_process";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const N = 300;
const C = fs.constants;
const data = Buffer.alloc(3000, 97);
const root = fs.mkdtempSync(join(process.argv[2] ?? tmpdir(), "file-op-costs-"));
const us = (ms) => `${((ms / N) * 1000).toFixed(0)} µs`;

function round() {
  const dir = fs.mkdtempSync(join(root, "r-"));
  for (let i = 0; i < N; i++) fs.writeFileSync(join(dir, `f${i}`), data);
  execSync("sync");
  const t = { create: 0, temp: 0, rename: 0, unlink: 0, recreate: 0, lstat: 0 };
  const time = (key, fn) => {
    const start = performance.now();
    const out = fn();
    t[key] += performance.now() - start;
    return out;
  };
  for (let i = 0; i < N; i++) {
    const fd = time("create", () => fs.openSync(join(dir, `new${i}`), C.O_WRONLY | C.O_CREAT | C.O_EXCL, 0o644));
    fs.closeSync(fd);
  }
  for (let i = 0; i < N; i++) {
    const fd = time("temp", () => fs.openSync(join(dir, `t${i}`), C.O_WRONLY | C.O_CREAT | C.O_EXCL, 0o600));
    fs.writeSync(fd, data);
    fs.closeSync(fd);
    time("rename", () => fs.renameSync(join(dir, `t${i}`), join(dir, `f${i}`)));
  }
  for (let i = 0; i < N; i++) {
    time("unlink", () => fs.unlinkSync(join(dir, `f${i}`)));
    const fd = time("recreate", () => fs.openSync(join(dir, `f${i}`), C.O_WRONLY | C.O_CREAT | C.O_EXCL, 0o644));
    fs.writeSync(fd, data);
    fs.closeSync(fd);
  }
  for (let i = 0; i < N; i++) time("lstat", () => fs.lstatSync(join(dir, `f${i}`)));
  fs.rmSync(dir, { recursive: true, force: true });
  execSync("sync"); // a removal's discards and journal writes are not the next round's
  return t;
}

for (let r = 0; r < 3; r++) {
  const t = round();
  console.log(
    `round ${r}: a new file ${us(t.create)}; temp + rename over it ${us(t.temp + t.rename)} ` +
      `(create ${us(t.temp)}, rename ${us(t.rename)}); unlink + create ${us(t.unlink + t.recreate)} ` +
      `(unlink ${us(t.unlink)}, create ${us(t.recreate)}); lstat ${us(t.lstat)}`,
  );
}
fs.rmSync(root, { recursive: true, force: true });
