// Times a page in Debian's Chromium (playwright-core): from navigation to
// the first paint of its flame graph (microscope's canvas: the frames the
// page lists as drawn, then the frame painted; with "pprof", pprof -http's
// d3-flame-graph: its first `.d3-flame-graph rect`), in a fresh browser
// context each run. Prints one JSON line per run:
// {"paint_ms", "fcp_ms", "frames"}.
// With "zoom" (microscope's view only), then times a range selected on the
// timeline (a drag over a fifth of it) until the flame graph is drawn again
// for it ("select_ms"), and zooming into it (+) until the timeline is drawn
// again at that range ("zoom_ms": at once, from the columns it has; from
// the key's event in the page, "zoom_in_page_ms"), and
// until it is drawn from the server's answer for the range
// ("zoom_answered_ms"): the page's performance marks.
// With "speedscope", times speedscope's page (its #profileURL= fetched)
// until it has loaded the profile (its title names it) and drawn its
// flame chart (a canvas, two animation frames later).
// Usage: PLAYWRIGHT_CORE=.../index.mjs node serve_paint.mjs URL RUNS [zoom|speedscope]
const {chromium} = await import(process.env.PLAYWRIGHT_CORE);
const [url, runs] = [process.argv[2], Number(process.argv[3] ?? 5)];
const zoom = process.argv[4] === 'zoom', speedscope = process.argv[4] === 'speedscope';
const pprof = process.argv[4] === 'pprof';
const marks = (page, name) => page.evaluate((n) => performance.getEntriesByName(n).length, name);
// Milliseconds from `act` until the page has one more `name` mark.
async function until(page, name, act) {
  const before = await marks(page, name);
  const t0 = await page.evaluate(() => performance.now());
  await act();
  await page.waitForFunction(([n, k]) => performance.getEntriesByName(n).length > k, [name, before],
                             {timeout: 120000});
  return (await page.evaluate((n) => performance.getEntriesByName(n).at(-1).startTime, name)) - t0;
}
// speedscope draws with WebGL: a software GL in a headless browser.
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', ...(speedscope ? ['--enable-unsafe-swiftshader', '--use-angle=swiftshader'] : [])],
});
try {
  for (let i = 0; i < runs; ++i) {
    const context = await browser.newContext({viewport: {width: 1280, height: 900}});
    const page = await context.newPage();
    await page.goto(url, {waitUntil: 'commit'});
    if (speedscope) {
      await page.waitForFunction(() => document.title.includes(' - speedscope') && document.querySelector('canvas'),
                                 null, {timeout: 120000});
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    } else if (pprof) {
      await page.waitForSelector('.d3-flame-graph rect', {timeout: 120000});
    } else {
      // microscope's canvas: the frames it drew, then the frame painted.
      await page.waitForFunction(() => (globalThis.microscopeFlame?.() ?? []).length > 0, null, {timeout: 120000});
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
    }
    const got = await page.evaluate(() => ({
      paint_ms: performance.now(),
      fcp_ms: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? null,
      frames: globalThis.microscopeFlame?.().length ?? document.querySelectorAll('.d3-flame-graph rect').length,
    }));
    if (zoom) {
      await page.waitForFunction(() => performance.getEntriesByName('microscope:lanes-drawn').length);
      const box = await page.locator('.lanes canvas').boundingBox();
      await page.mouse.move(box.x + box.width * 0.2, box.y + 5);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width * 0.4, box.y + 5, {steps: 2});
      got.select_ms = await until(page, 'microscope:flame-drawn', () => page.mouse.up());
      // The other views' answers for the selection come and are drawn
      // first: the zoom is timed on a page at rest.
      await page.waitForLoadState('networkidle');
      await page.waitForTimeout(300);
      const before = await marks(page, 'microscope:lanes-drawn');
      // The key's own time in the page (its event's timeStamp): the zoom
      // in the page, without the harness's sending of the key.
      await page.evaluate(() => document.addEventListener(
          'keydown', (e) => performance.mark('bench:zoom-key', {startTime: e.timeStamp}),
          {capture: true, once: true}));
      got.zoom_ms = await until(page, 'microscope:lanes-drawn',
                                () => page.locator('.lanes canvas').press('+'));
      got.zoom_in_page_ms = await page.evaluate(
          (k) => performance.getEntriesByName('microscope:lanes-drawn')[k].startTime -
                 performance.getEntriesByName('bench:zoom-key')[0].startTime,
          before);
      const t0 = (await page.evaluate((n) => performance.getEntriesByName(n).at(-1).startTime,
                                      'microscope:lanes-drawn')) - got.zoom_ms;
      await page.waitForFunction(
          (k) => performance.getEntriesByName('microscope:lanes-drawn').slice(k).some((m) => !m.detail?.preview),
          before, {timeout: 120000});
      got.zoom_answered_ms = (await page.evaluate(
          (k) => performance.getEntriesByName('microscope:lanes-drawn').slice(k).find((m) => !m.detail?.preview).startTime,
          before)) - t0;
    }
    console.log(JSON.stringify(got));
    await context.close();
  }
} finally {
  await browser.close();
}
