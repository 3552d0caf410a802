// Child process for the confinement race tests: flips `link` between two states until killed, as code in the
// workspace could. Mode "link": `link` is a symlink, pointed at `inside`, then at `outside`, each flip one atomic
// rename of a fresh symlink over it. Mode "folder": `link` is the real folder `inside` (renamed into place), then
// a symlink to `outside`. Prints "swapping" once started and "flips <n>" every 1000 flips. A 0-ms wait between
// flips gives the scheduler a chance to run the test on a 2-core machine.
// argv: mode link inside outside
import { renameSync, rmSync, symlinkSync } from "node:fs";

const [mode, link, inside, outside] = process.argv.slice(2);
if ((mode !== "link" && mode !== "folder") || !link || !inside || !outside)
  throw new Error("usage: symlink-swapper link|folder link inside outside");

const temp = `${link}.swap-${process.pid}`;
const pause = new Int32Array(new SharedArrayBuffer(4));
let flips = 0;

function pointAt(target: string): void {
  rmSync(temp, { force: true });
  symlinkSync(target, temp);
  renameSync(temp, link!);
}

process.stdout.write("swapping\n");
for (;;) {
  if (mode === "link") {
    pointAt(outside);
    Atomics.wait(pause, 0, 0, 0);
    pointAt(inside);
  } else {
    // `inside` is where the real folder waits while `link` leads outside.
    rmSync(temp, { force: true });
    symlinkSync(outside, temp);
    renameSync(link!, inside);
    renameSync(temp, link!);
    Atomics.wait(pause, 0, 0, 0);
    rmSync(link!, { force: true });
    renameSync(inside, link!);
  }
  flips += 2;
  if (flips % 1000 === 0) process.stdout.write(`flips ${flips}\n`);
  Atomics.wait(pause, 0, 0, 0);
}
