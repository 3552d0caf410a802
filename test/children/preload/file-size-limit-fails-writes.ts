// Preloaded into a child run under a file-size limit (`ulimit -f`): with a listener, SIGXFSZ no longer kills the
// process, so a write past the limit fails with EFBIG instead, like a write to a full disk.
process.on("SIGXFSZ", () => {});
