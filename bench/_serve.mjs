import { startApp, startDatabase } from './support.mjs';
const db = await startDatabase();
const api = await startApp('dist/apps/api/src/main.js', { DATABASE_URL: db.url, OS_SECURITY_KEY: 'k-000000000000000000000000000000', DEMO_COMPONENTS: 'true' });
console.log(api.url);
process.on('SIGTERM', async () => { await api.stop(); await db.stop(); process.exit(0); });
setInterval(() => {}, 1e6);
