// What speed.mjs and keys.mjs share: the server started on traces, the
// browser launched as both measure it, a page's renderer process found,
// and a process's memory read.

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

/** `tracetree serve --http` on `traces`: the server and its page's URL. */
export async function serve(binary, traces) {
  const server = spawn(binary, ['serve', '--http', ...traces], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve) => {
    createInterface({ input: server.stdout }).once('line', resolve);
  });
  return { server, url };
}

/** Headless Chromium (`CHROMIUM`, else Debian's), with a session on the
 * browser itself. */
export async function launch() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      '--enable-precise-memory-info'],
  });
  return { browser, browserSession: await browser.newBrowserCDPSession() };
}

/** The renderer process of `page`: the one whose CPU time a busy loop in
 * the page adds to. */
export async function rendererOf(browserSession, page) {
  const times = async () => new Map((await browserSession.send('SystemInfo.getProcessInfo')).processInfo
    .filter((process) => process.type === 'renderer').map((process) => [process.id, process.cpuTime]));
  const before = await times();
  await page.evaluate(() => {
    const end = performance.now() + 300;
    while (performance.now() < end);
  });
  let busiest = null;
  let most = -1;
  for (const [pid, time] of await times()) {
    const spent = time - (before.get(pid) ?? 0);
    if (spent > most) [busiest, most] = [pid, spent];
  }
  return busiest;
}

/** A process's resident and anonymous memory in MB (Linux's /proc). */
export function memoryOf(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const mb = (key) => Math.round(Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(status)[1]) / 102.4) / 10;
  return { rss: mb('VmRSS'), anon: mb('RssAnon') };
}

/** A page of the viewer's size, patient with a loaded machine. */
export async function newPage(browser) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(120_000);
  return page;
}

/** Resolves once `page` has drawn its selected row, loaded. */
export function settled(page) {
  return page.waitForFunction(() => document.querySelector('#tree .row')
    && !document.querySelector('#tree .row.loading')
    && document.querySelector('#tree .row.selected')?.dataset.index === (document.querySelector('#tree').dataset.selected ?? '0'));
}
