import { memoryBackend } from "../../src/backend/memory/memory-backend.js";
import { runBackendConformance } from "../../src/testing/index.js";

runBackendConformance({
  name: "memory",
  create: () => memoryBackend(),
  lacks: {
    writeBlobs: "a blob write is a step in memory: there is no round trip to save",
    writeScanBlobs: "a blob held in memory costs its bytes however it was written",
    deleteBlobs: "a delete is a step in memory: there is no round trip or write to save by batching",
    archiveLogAfter: "a rewind keeps the events it cut in its record: there is no log file to copy bytes from",
    readEventBatches: "its events are already in memory, so SessionStore's one-await-per-event fallback costs no I/O",
    discardPartialWrites: "a blob is stored in one synchronous step, so no write is ever left half done",
  },
  crashLeftStateAbsent: "nothing outlives a crash: the sessions live in the crashed process's memory",
  crashedHolderAbsent: "its lock lives in one process's memory and dies with its holder: no other process can see it",
});
