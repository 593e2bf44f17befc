// Preloaded (`node --require`) into every process npm start runs. When npm start is gone without stopping them (kill -9,
// an OOM kill), this process stops as on SIGTERM, within a second, rather than keep the port and the data directory
// with nobody to stop it. Its output then has no reader: what it still writes is lost, not fatal (pino's own
// destination already drops a broken pipe; these are the other writers').
const parent = process.ppid;
const watch = setInterval(() => {
  if (process.ppid === parent) {
    return;
  }
  clearInterval(watch);
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', () => undefined);
  }
  process.kill(process.pid, 'SIGTERM');
}, 1000);
watch.unref();
