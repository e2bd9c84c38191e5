// Browser test of the operations console: starts `keb dev` (shared simulated runtimes), provisions a runtime as
// the README's walkthrough does (each simulated cluster takes 15 s: long enough to open the page of a provisioning
// still running on a busy machine), logs into /console with a dev token, filters to the instance, opens its timeline,
// watches the steps appear until the provisioning succeeds, then provisions one with a module Lifecycle Manager
// does not have and finds its Kyma state Error in the list (filtered by it) and its module's error on its page,
// then reads the overview, a dry-run orchestration's progress, the account pool and the events pages,
// and saves screenshots (docs/images with `make screenshots`). Run from the
// repository root by `make test` (target browser-test) when chromium is installed.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium } from 'playwright-core';

const root = resolve(process.env.KEB_ROOT || '.');
const keb = join(root, 'bin', 'keb');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
// make test keeps its screenshots in bin/screenshots; `make screenshots` refreshes the committed ones in docs/images.
const shots = resolve(root, process.env.SCREENSHOTS || join('bin', 'screenshots'));
mkdirSync(shots, { recursive: true });

function fail(msg) { throw new Error(msg); }

async function freePort() {
  return new Promise((ok, ko) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
    s.on('error', ko);
  });
}

async function until(what, fn, seconds) {
  const end = Date.now() + seconds * 1000;
  let last;
  while (Date.now() < end) {
    try { const v = await fn(); if (v) return v; } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 500));
  }
  fail(`gave up waiting for ${what}${last ? ': ' + last.message : ''}`);
}

const dir = mkdtempSync(join(tmpdir(), 'keb-browser-'));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const dev = spawn(keb, ['dev', '--port', String(port), '--dir', dir, '--runtime-mode', 'shared', '--runtime-delay', '15s'], {
  cwd: root, env: { ...process.env, APP_LOG_FORMAT: 'text', APP_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'pipe'],
});
let devLog = '';
dev.stderr.on('data', (d) => { devLog += d; });
const devExited = new Promise((r) => dev.on('exit', r));

let browser;
try {
  await until('keb dev to answer /healthz', async () => (await fetch(base + '/healthz')).ok, 180);
  const token = (scope) => execFileSync(keb, ['token', '--dir', dir, '--scope', scope], { cwd: root }).toString().trim();
  const writeToken = token('broker:write');

  // Provision, as the README's walkthrough does.
  const instanceID = randomUUID();
  const res = await fetch(`${base}/oauth/v2/service_instances/${instanceID}?accepts_incomplete=true`, {
    method: 'PUT',
    headers: { 'X-Broker-API-Version': '2.14', 'Content-Type': 'application/json', Authorization: 'Bearer ' + writeToken },
    body: JSON.stringify({
      service_id: '47c9dcbf-ff30-448e-ab36-d3bad66ba281', plan_id: '4deee563-e5ec-4731-b9b1-53b42d855f0c',
      context: { globalaccount_id: randomUUID(), subaccount_id: 'console-subaccount', user_id: 'me@example.com' },
      parameters: { name: 'console-demo' },
    }),
  });
  if (res.status !== 202) fail(`provisioning answered ${res.status}: ${await res.text()}`);

  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 800 } });

  // Not logged in: the login page.
  await page.goto(base + '/console');
  if (!page.url().includes('/console/login')) fail('the console did not ask for a login: ' + page.url());
  await page.fill('#token', token('cld:read'));
  await page.click('#login');
  // The console opens on the overview: counts, charts, the pool.
  await page.waitForSelector('#ops-chart');
  if (Number(await page.textContent('#total')) < 1) fail('the overview counts no live runtime');
  if ((await page.locator('#pool tr[data-type]').count()) < 1) fail('the overview shows no account pool');
  await page.goto(base + '/console/runtimes');
  await page.waitForSelector('#runtimes');
  const newRow = page.locator(`#runtimes tr[data-instance="${instanceID}"]`);
  if ((await newRow.count()) !== 1) fail('the runtimes table lacks the new instance');
  if (!(await newRow.locator('td.name').textContent()).includes('console-demo')) fail('the row does not name the runtime');
  // A short ID whose copy button copies the whole one.
  if ((await newRow.locator('button.copy').first().getAttribute('data-copy')) !== instanceID) fail('the copy button does not hold the whole ID');
  if ((await newRow.locator('.id code').first().textContent()) !== instanceID.slice(0, 8)) fail('the list does not show the short ID');

  // Filter to the instance.
  await page.fill('input[name=instance_id]', instanceID);
  await page.click('#apply');
  await page.waitForURL(/instance_id=/);
  const rows = await page.locator('#runtimes tbody tr').count();
  if (rows !== 1) fail(`the filtered table has ${rows} rows, want 1`);
  await page.screenshot({ path: join(shots, 'console-runtimes.png') });

  // Its timeline: steps appear while the provisioning runs (live refresh, no reload).
  await page.click(`a[href="/console/instances/${instanceID}"]`);
  await page.waitForSelector('#timeline');
  // A mark on this page: a reload would drop it.
  await page.evaluate(() => { window.kebNoReload = true; });
  const stateAtOpen = (await page.textContent('#state')).trim();
  if (stateAtOpen !== 'provisioning') fail(`the instance page opened during provisioning says state ${stateAtOpen}`);
  await until('a step in the timeline', async () => (await page.locator('tr.step:not(.to-come)').count()) > 0, 60);
  await until('the waiting step', async () => (await page.locator('#timeline').textContent()).includes('running'), 60);
  // The steps still to come are drawn too, and the operation says how long it has been running.
  if (!(await page.locator('#timeline .running-for').first().textContent()).includes('running for')) fail('the running operation does not say for how long');
  await page.screenshot({ path: join(shots, 'console-timeline-running.png'), fullPage: true });
  const stepsWhileRunning = await page.locator('tr.step:not(.to-come)').count();
  const toCome = await page.locator('tr.step.to-come').count();
  await until('the provisioning to succeed on the page', async () => {
    const t = await page.locator('#ops').getAttribute('data-live');
    return t === 'false' && (await page.locator('#timeline').textContent()).includes('succeeded');
  }, 120);
  // The whole page follows, not only the timeline: the state turned too, without a reload.
  await until('the state to say succeeded', async () => (await page.textContent('#state')).trim() === 'succeeded', 10);
  if (!(await page.evaluate(() => window.kebNoReload === true))) fail('the instance page was reloaded to show the new state');
  if (!/\d\d:\d\d:\d\d UTC/.test(await page.textContent('#instance'))) fail('the instance page shows times without their zone');
  const steps = await page.locator('tr.step:not(.to-come)').count();
  if (toCome < 1 || steps < stepsWhileRunning + 1) fail(`while running, ${toCome} steps to come were drawn`);
  if ((await page.locator('tr.step.to-come').count()) !== 0) fail('a finished operation still shows steps to come');
  if (steps <= stepsWhileRunning) fail(`live refresh showed no new steps (${stepsWhileRunning} -> ${steps})`);
  for (const name of ['resolve_hyperscaler_secret', 'create_runtime', 'check_runtime', 'apply_kyma']) {
    if ((await page.locator(`tr.step[data-step="${name}"]`).count()) !== 1) fail(`step ${name} missing from the timeline`);
  }
  // check_runtime looked at least twice: once while the cluster was pending, once when it was ready.
  const attempts = Number(await page.locator('tr.step[data-step="check_runtime"] td:nth-child(4)').textContent());
  // Each step is a bar on the operation's time axis.
  if ((await page.locator('tr.step[data-step="check_runtime"] .gantt .seg').count()) !== 1) fail('check_runtime has no bar');
  if (!(attempts >= 2)) fail(`check_runtime shows ${attempts} attempts, want at least 2`);
  await page.screenshot({ path: join(shots, 'console-timeline-succeeded.png'), fullPage: true });

  // The metrics show it too.
  const metrics = await (await fetch(base + '/metrics')).text();
  if (!/kcp_keb_v2_operations_provisioning_succeeded_total\{plan_id="4deee563-e5ec-4731-b9b1-53b42d855f0c"\} 1/.test(metrics)) {
    fail('the metrics do not count the succeeded provisioning');
  }

  // A runtime whose modules Lifecycle Manager cannot install: provisioned all the same (the cluster is Ready),
  // its Kyma resource in Error, which the console's list (Kyma column and filter) and instance page show.
  const broken = randomUUID();
  const res2 = await fetch(`${base}/oauth/v2/service_instances/${broken}?accepts_incomplete=true`, {
    method: 'PUT',
    headers: { 'X-Broker-API-Version': '2.14', 'Content-Type': 'application/json', Authorization: 'Bearer ' + writeToken },
    body: JSON.stringify({
      service_id: '47c9dcbf-ff30-448e-ab36-d3bad66ba281', plan_id: '4deee563-e5ec-4731-b9b1-53b42d855f0c',
      context: { globalaccount_id: randomUUID(), subaccount_id: 'console-subaccount', user_id: 'me@example.com' },
      parameters: { name: 'console-broken', modules: { list: [{ name: 'istio' }, { name: 'no-such-module' }] } },
    }),
  });
  if (res2.status !== 202) fail(`the second provisioning answered ${res2.status}: ${await res2.text()}`);
  await page.goto(base + '/console/runtimes');
  await page.selectOption('select[name=kyma_state]', 'Error');
  await page.click('#apply');
  await page.waitForURL(/kyma_state=Error/);
  await until('the runtime in Error in the filtered list', async () => {
    await page.reload();
    return (await page.locator(`#runtimes tbody tr:has(a[href="/console/instances/${broken}"]) td.kyma`).textContent().catch(() => '')) === 'Error';
  }, 120);
  if ((await page.locator('#runtimes tbody tr').count()) !== 1) fail('the kyma_state=Error list holds more than the broken runtime');
  await page.screenshot({ path: join(shots, 'console-kyma-error-list.png') });
  await page.click(`a[href="/console/instances/${broken}"]`);
  await page.waitForSelector('#modules');
  if ((await page.textContent('#kyma-state')).trim().split(/\s/)[0] !== 'Error') fail('the instance page does not show the Kyma state Error');
  const row = page.locator('#modules tr[data-module="no-such-module"]');
  const rowText = await row.textContent();
  if (!rowText.includes('Error') || !rowText.includes('module template for module "no-such-module" not found')) {
    fail(`the module table's no-such-module row says ${JSON.stringify(rowText)}`);
  }
  if (!(await page.locator('#modules tr[data-module="istio"]').textContent()).includes('Ready')) fail('istio is not shown Ready');
  await page.screenshot({ path: join(shots, 'console-kyma-error.png'), fullPage: true });

  // The overview again, with both runtimes; then a dry-run orchestration's progress, the pool and the events.
  await page.goto(base + '/console');
  await page.waitForSelector('#ops-chart');
  if ((await page.locator('#ops-chart rect').count()) < 1) fail('the operations chart draws no bar');
  if ((await page.locator('#steps .bar').count()) < 3) fail('the overview lists no step durations');
  await page.screenshot({ path: join(shots, 'console-overview.png'), fullPage: true });
  const upgradeToken = token('broker-upgrade:write');
  const orch = await fetch(`${base}/upgrade/kyma`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + upgradeToken },
    body: JSON.stringify({ targets: { include: [{ target: 'all' }] }, dryRun: true }),
  });
  if (orch.status !== 202) fail(`the orchestration answered ${orch.status}: ${await orch.text()}`);
  const { orchestrationID } = await orch.json();
  await page.goto(base + '/console/orchestrations');
  await page.waitForSelector(`#orchestrations tr[data-orchestration="${orchestrationID}"]`);
  await page.click(`a[href="/console/orchestrations/${orchestrationID}"]`);
  await until('the orchestration to finish on its page', async () => {
    await page.reload();
    return /2 of 2 done/.test(await page.locator('#progress').textContent().catch(() => '')) &&
      ['succeeded', 'failed'].includes((await page.textContent('#orchestration-state')).trim());
  }, 120);
  if ((await page.locator('#targets tbody tr[data-instance]').count()) !== 2) fail('the orchestration page does not list both runtimes');
  await page.screenshot({ path: join(shots, 'console-orchestration.png'), fullPage: true });
  await page.goto(base + '/console/pool');
  await page.waitForSelector('#pool-summary');
  if ((await page.locator('#accounts tbody tr').count()) < 2) fail('the pool page lists no accounts');
  await page.screenshot({ path: join(shots, 'console-pool.png') });
  await page.goto(base + '/console/events');
  await page.fill('input[name=instance_ids]', instanceID);
  await page.click('#show');
  await page.waitForSelector('#events');
  if ((await page.locator('#events tr[data-kind="step_done"]').count()) < 4) fail('the events page lists too few step_done events');
  await page.screenshot({ path: join(shots, 'console-events.png') });
  console.log(`browser test passed: ${steps} steps seen (${stepsWhileRunning} while running); screenshots in ${shots}`);
} catch (e) {
  console.error('browser test failed:', e.message, '\n--- keb dev log ---\n' + devLog.slice(-4000));
  process.exitCode = 1;
} finally {
  if (browser) await browser.close();
  dev.kill('SIGTERM');
  const timer = setTimeout(() => dev.kill('SIGKILL'), 30000);
  await devExited;
  clearTimeout(timer);
  rmSync(dir, { recursive: true, force: true });
}
