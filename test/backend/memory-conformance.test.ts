import { memoryBackend } from "../../src/backend/memory/memory-backend.js";
import { runBackendConformance } from "../../src/testing/index.js";

runBackendConformance({ name: "memory", create: () => memoryBackend() });
