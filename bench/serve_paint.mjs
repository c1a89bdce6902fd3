// Times a page in Debian's Chromium (playwright-core): from navigation to
// the first frame of its flame graph (`.d3-flame-graph rect`, the selector
// microscope's view and pprof -http's flame graph share), in a fresh
// browser context each run. Prints one JSON line per run:
// {"paint_ms", "fcp_ms", "frames"}.
// Usage: PLAYWRIGHT_CORE=.../index.mjs node serve_paint.mjs URL RUNS
const {chromium} = await import(process.env.PLAYWRIGHT_CORE);
const [url, runs] = [process.argv[2], Number(process.argv[3] ?? 5)];
const browser = await chromium.launch({executablePath: '/usr/bin/chromium', args: ['--no-sandbox']});
try {
  for (let i = 0; i < runs; ++i) {
    const context = await browser.newContext({viewport: {width: 1280, height: 900}});
    const page = await context.newPage();
    await page.goto(url, {waitUntil: 'commit'});
    await page.waitForSelector('.d3-flame-graph rect', {timeout: 120000});
    const got = await page.evaluate(() => ({
      paint_ms: performance.now(),
      fcp_ms: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null,
      frames: document.querySelectorAll('.d3-flame-graph rect').length,
    }));
    console.log(JSON.stringify(got));
    await context.close();
  }
} finally {
  await browser.close();
}
