// Preloaded (`node --require`) into every process npm start runs. When npm start is gone without stopping them (kill -9,
// an OOM kill), this process stops as on SIGTERM, rather than keep the port and the data directory with nobody to stop
// it. It notices within a second (its parent changes), or at once when it writes to the pipe npm start read (EPIPE):
// what it writes then is lost, not fatal (pino's own destination already drops a broken pipe; these are the others').
const parent = process.ppid;
let orphaned = false;
const watch = setInterval(() => process.ppid !== parent && stop(), 1000);
watch.unref();

function stop() {
  if (!orphaned) {
    orphaned = true;
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }
}

for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error) => {
    if (error.code !== 'EPIPE') {
      throw error;
    }
    stop();
  });
}
