// Child process for the watched-scan test of folders that vanish and come back: renames folder `a` to `b` and
// back, over and over, so a scan that lists the parent meets the folder gone by the time it watches it and back
// by the time it lists it. Prints "flipping" once started; when stdin ends it stops with the folder at `a` and
// prints "stopped <flips>".
// argv: a b
import { renameSync } from "node:fs";

const [a, b] = process.argv.slice(2);
if (!a || !b) throw new Error("usage: folder-flipper a b");

let stop = false;
process.stdin.on("data", () => undefined).on("end", () => (stop = true));
let flips = 0;
const pause = new Int32Array(new SharedArrayBuffer(4));
process.stdout.write("flipping\n");
while (!stop) {
  // Away and straight back, then a short rest: few enough events that the watcher does not give up for a
  // burst and walk (a walk watches every folder afresh, which would hide the hole).
  for (let i = 0; i < 50; i++) {
    renameSync(a, b);
    renameSync(b, a);
    flips += 2;
    Atomics.wait(pause, 0, 0, 0.2);
  }
  await new Promise((resolve) => setImmediate(resolve));
}
process.stdout.write(`stopped ${flips}\n`);
