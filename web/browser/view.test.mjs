// The browser view in Debian's Chromium, driven by playwright-core: run by
// tests/e2e/serve_browser.py (node --test) against `microscope serve` over
// captures it recorded. SERVE_URL is the server, PLAYWRIGHT_CORE the
// driver's module, SCREENSHOTS where each step's screenshot goes.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const url = process.env.SERVE_URL;
const shots = process.env.SCREENSHOTS;
let browser, page;
const errors = [];

// The API needs the printed URL's token: the page has it as a cookie once
// the URL is loaded (before()), this script sends it itself.
const token = new URL(url).searchParams.get("token");
// A GET on a kept-alive connection the server closes as idle (2 s) at that
// moment fails without an answer; as browsers do for an idempotent
// request, it is sent once more on a new connection.
const api = async (query) => {
  const get = () => fetch(new URL(query, url), { headers: { Authorization: `Bearer ${token}` } });
  let answer;
  try {
    answer = await get();
  } catch (e) {
    if (e.cause?.code !== "UND_ERR_SOCKET") throw e;
    answer = await get();
  }
  return answer.json();
};
const field = (name) => page.locator(`dd[data-field="${name}"]`).textContent();
const ready = () => page.waitForSelector('main[data-ready="yes"]');
// Screenshots wait for the page's last drawings.
const settle = () => page.waitForTimeout(300);
const shot = async (name) => {
  await settle();
  await page.screenshot({ path: `${shots}/${name}.png`, fullPage: true });
};
const query = () => new URL(page.url()).searchParams;
// The flame graph is drawn on a canvas; the page lists what it drew
// (globalThis.microscopeFlame): each frame's name, box in the canvas,
// fill, path from the root, and whether it is the keyboard's current one.
const flameFrames = () => page.evaluate(() => globalThis.microscopeFlame?.() ?? []);
const flameFrame = async (name) => (await flameFrames()).find((f) => f.name === name);
const flameDrawn = () => page.waitForFunction(() => (globalThis.microscopeFlame?.() ?? []).length > 0);
const flameHas = (name, has = true) => page.waitForFunction(([n, h]) =>
  (globalThis.microscopeFlame?.() ?? []).some((f) => f.name === n) === h, [name, has]);
const flameCanvas = () => page.locator(".flame-canvas canvas");
const clickFrame = async (name) => {
  const f = await flameFrame(name);
  assert.ok(f, `the frame ${name} is drawn`);
  const box = await flameCanvas().boundingBox();
  await page.mouse.click(box.x + f.x + Math.min(f.w / 2, 20), box.y + f.y + f.h / 2);
};

before(async () => {
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(url);  // the printed URL sets the token's cookie
});
after(async () => {
  await browser?.close();
});

test("loads: the header and the flame graph of the capture", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  await flameDrawn();
  const whole = await api("/api/report?capture=threads.mscap");
  // The header is report's, line for line.
  const samples = whole.header.lines.find((l) => l.label === "samples").text;
  assert.ok(samples.startsWith(`${whole.header.samples} (`), samples);
  assert.equal(await field("samples"), samples);
  assert.equal(await field("stacks"), whole.header.lines.find((l) => l.label === "stacks").text);
  assert.ok((await flameFrames()).length > 5);
  assert.ok(await flameFrame("work_c"));
  await shot("1-loaded");
});

test("a click zooms the flame graph in the page; its bar focuses every view on the function", async () => {
  const asked = [];
  const listen = (r) => r.url().includes("/api/") && !r.url().includes("/api/captures") && asked.push(r.url());
  page.on("request", listen);
  const graph = await flameCanvas().boundingBox();
  const narrow = (await flameFrame("work_b")).w;
  assert.ok(narrow < graph.width * 0.9, `work_b ${narrow} px of ${graph.width}`);
  await clickFrame("work_b");
  const bar = page.getByRole("status").filter({ hasText: "zoomed into work_b" });
  await bar.waitFor();
  await page.waitForFunction((w) => globalThis.microscopeFlame().find((f) => f.name === "work_b").w > w * 0.95,
                             graph.width);
  page.off("request", listen);
  assert.deepEqual(asked, [], "the zoom asked the server nothing");
  assert.equal(query().get("focus"), null);
  await shot("2-zoomed");
  await bar.getByRole("button", { name: /zoom out/ }).click();
  await bar.waitFor({ state: "detached" });
  await clickFrame("work_b");
  await page.getByRole("button", { name: /focus every view on it/ }).click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("focus") === "work_b");
  await ready();
  await page.waitForSelector('dd[data-field="filter"]');
  const focused = await api("/api/report?capture=threads.mscap&focus=%5Ework_b%24");
  const filter = focused.header.lines.find((l) => l.label === "filter").text;
  assert.ok(filter.includes(`: ${focused.all.samples} samples`), filter);
  assert.equal(await field("filter"), filter);
  await page.getByRole("button", { name: "call tree", exact: true }).click();
  await page.waitForSelector("table.tree tbody tr");
  const names = await page.locator("table.tree .name").allTextContents();
  assert.ok(names.some((n) => n.startsWith("work_b")), names.join(", "));
  assert.ok(!names.some((n) => n.startsWith("work_c")), "work_c is not under a focus on work_b");
  await shot("2-focused-tree");
});

test("a zoomed frame focuses on its subtree only: the graph starts at it, undone from the bar", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  await flameDrawn();
  await clickFrame("work_b");
  await page.getByRole("button", { name: /focus on this subtree only/ }).click();
  await page.waitForFunction(() => (new URL(location.href).searchParams.get("path") ?? "").endsWith(";work_b"));
  await ready();
  const path = query().get("path");
  const answer = await api(`/api/report?capture=threads.mscap&views=tree&focus_path=${encodeURIComponent(path)}`);
  assert.deepEqual(answer.tree.map((n) => n.function), ["work_b"], path);
  // The graph's one root under the whole is work_b; work_c and the path's
  // callers are gone.
  await flameHas("work_c", false);
  const roots = (await flameFrames()).filter((f) => f.name !== "all").map((f) => f.name);
  assert.ok(roots.includes("work_b") && !roots.includes(path.split(";")[0]), roots.join(", "));
  const chip = page.getByRole("button", { name: `undo: focus on the subtree ${path}` });
  assert.ok((await chip.textContent()).includes("› work_b"));
  // The filter line says so, with what it kept.
  assert.ok((await field("filter")).startsWith(`focus path ${path}: ${answer.all.samples} samples`),
            await field("filter"));
  await shot("2-subtree");
  // By keyboard: S on a frame focuses on its subtree, under the path.
  if (await flameFrame("burn_units")) {
    await clickFrame("burn_units");
    await page.keyboard.press("s");
    await page.waitForFunction((p) => new URL(location.href).searchParams.get("path") === p + ";burn_units", path);
    await ready();
  }
  await page.getByRole("button", { name: /^undo: focus on the subtree/ }).click();
  await page.waitForFunction(() => !new URL(location.href).searchParams.get("path"));
  await ready();
  await flameHas("work_c");
});

test("frames are coloured by kind of code, with a legend of the kinds shown", async () => {
  await page.goto(new URL("/?capture=gxx.mscap", url).href);
  await ready();
  await flameDrawn();
  const answer = await api("/api/report?capture=gxx.mscap&views=tree");
  const kinds = new Map();
  const walk = (n) => {
    if (!n.pruned && !kinds.has(n.kind ?? "native")) kinds.set(n.kind ?? "native", n.function);
    (n.children ?? []).forEach(walk);
  };
  answer.tree.forEach(walk);
  assert.ok(kinds.has("native") && kinds.has("kernel"), [...kinds.keys()].join(", "));
  const legend = page.getByLabel("kinds of code");
  for (const kind of kinds.keys()) assert.equal(await legend.locator(`[data-kind="${kind}"]`).count(), 1, kind);
  const fill = async (name) => (await flameFrame(name)).fill;
  assert.match(await fill(kinds.get("kernel")), /^hsl\(0, 60%/);
  assert.match(await fill(kinds.get("native")), /^hsl\(28, 85%/);
});

test("search marks the matching frames and says their share", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  await page.getByRole("searchbox", { name: "search functions" }).fill("work_c");
  await page.keyboard.press("Enter");
  const status = page.getByRole("status");
  await status.waitFor();
  await page.waitForFunction(() => /% of the samples/.test(document.querySelector("[role=status]").textContent));
  const text = await status.textContent();
  // The share is the server's: samples with work_c (any case) on their stack.
  const found = await api("/api/report?capture=threads.mscap&focus=" + encodeURIComponent("[wW][oO][rR][kK]_[cC]"));
  const whole = await api("/api/report?capture=threads.mscap");
  const c = whole.functions.find((f) => f.function === "work_c");
  assert.equal(found.all.samples, c.total.samples);
  assert.equal(found.kept.text, c.total.text);
  assert.ok(found.kept.text !== "100.00%" && text.includes(`on the stacks of ${found.kept.text} of the samples`), text);
  assert.equal(query().get("search"), "work_c");
  await shot("3-search");
});

test("a time range selected on the timeline filters the views", async () => {
  await page.goto(new URL("/?capture=threads.mscap&view=flat", url).href);
  await ready();
  const canvas = page.locator(".lanes canvas");
  await canvas.waitFor();
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + box.width * 0.2, box.y + 5);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + 5, { steps: 5 });
  await page.mouse.up();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("time"));
  await ready();
  await page.waitForSelector('dd[data-field="filter"]');
  const time = query().get("time");
  const kept = await api(`/api/report?capture=threads.mscap&time=${encodeURIComponent(time)}`);
  const whole = await api("/api/report?capture=threads.mscap");
  assert.ok(kept.all.samples > 0 && kept.all.samples < whole.all.samples, time);
  assert.equal(await field("filter"), kept.header.lines.find((l) => l.label === "filter").text);
  await shot("4-time-range");
});

test("the timeline has a time axis, says what a column holds, and selects and zooms by keyboard", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  const canvas = page.locator(".lanes canvas");
  await canvas.waitFor();
  const lanes = (await api("/api/report?capture=threads.mscap&views=lanes&lane_width=400&top=1000")).lanes;
  const span = lanes.bucket_ns * 400;
  // Ticks in real units, from the start.
  const ticks = await page.getByLabel("time axis").locator(".tick").allTextContents();
  assert.ok(ticks.length >= 3 && ticks[0] === "0 ns" && ticks.slice(1).every((t) => / (ms|s)$/.test(t)), ticks.join(", "));
  // Hovering the busiest column of the first lane says its samples.
  const lane = lanes.lanes[0];
  const column = lane.buckets.indexOf(Math.max(...lane.buckets));
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + (column + 0.5) * box.width / 400, box.y + 9);
  const tip = page.locator(".lanes [role=tooltip]");
  await tip.waitFor();
  const text = await tip.textContent();
  assert.ok(text.startsWith(`${lane.name} (${lane.tid})`) && text.includes(`${lane.buckets[column]} samples`), text);
  await shot("4b-timeline-tooltip");
  await page.mouse.move(box.x - 50, box.y - 50);
  // Keyboard: a cursor by the arrows, widened with Shift, selected by Enter.
  await canvas.focus();
  for (let i = 0; i < 100; i++) await page.keyboard.press("ArrowRight");
  for (let i = 0; i < 99; i++) await page.keyboard.press("Shift+ArrowRight");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => new URL(location.href).searchParams.get("time"));
  const [from, to] = query().get("time").split("..").map((t) => parseFloat(t) * 1e9);
  assert.ok(Math.abs(from - 99 * lanes.bucket_ns) < lanes.bucket_ns && Math.abs(to - 199 * lanes.bucket_ns) < lanes.bucket_ns,
    `${query().get("time")}: columns 99 to 198 of ${span} ns`);
  // + zooms into it: the lanes span it, every view shows it; - zooms out.
  // The range is drawn at once from the columns the page has (stretched),
  // then from the server's answer for it.
  const drawn = () => page.evaluate(() => performance.getEntriesByName("microscope:lanes-drawn").map((m) => !!m.detail?.preview));
  const before = (await drawn()).length;
  const asked = page.waitForRequest((r) => r.url().includes("views=lanes") && r.url().includes("time="));
  await page.keyboard.press("+");
  await asked;
  await page.waitForFunction((k) => performance.getEntriesByName("microscope:lanes-drawn").slice(k).some((m) => !m.detail?.preview), before);
  const since = (await drawn()).slice(before);
  assert.ok(since[0] === true && since.at(-1) === false,
    `the zoom drew the range at once from what the page had, then from the answer: ${since.join(", ")}`);
  await page.waitForFunction(() => new URL(location.href).searchParams.get("zoom"));
  assert.equal(query().get("zoom"), query().get("time"));
  const crumbs = page.getByRole("navigation", { name: "timeline zoom" });
  await crumbs.getByRole("button", { name: query().get("time"), exact: true }).waitFor();
  const zoomedTicks = await page.getByLabel("time axis").locator(".tick").allTextContents();
  assert.ok(parseFloat(zoomedTicks[0]) > 0, `the axis starts inside the range: ${zoomedTicks.join(", ")}`);
  await shot("4c-timeline-zoomed");
  await page.locator(".lanes canvas").focus();
  await page.keyboard.press("-");
  await page.waitForFunction(() => !new URL(location.href).searchParams.get("zoom"));
  assert.equal(query().get("time"), null);
});

test("an imported trace's tracks are drawn under the threads, named", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  const lanes = (await api("/api/report?capture=threads.mscap&views=lanes&lane_width=200")).lanes;
  assert.equal(lanes.trace_tracks.length, 1);
  const label = page.locator(".lane-names div.imported");
  await label.waitFor();
  assert.equal(await label.count(), lanes.trace_tracks.length);
  assert.equal(await label.first().textContent(), `⇢ ${lanes.trace_tracks[0].name}`);
  assert.match(await label.first().getAttribute("title"), /1 spans, 1 instants/);
  await shot("5b-imported");
});

test("a gap is hatched where it was, with its cause, and nowhere else", async () => {
  await page.goto(new URL("/?capture=attach.mscap", url).href);
  await ready();
  const lanes = (await api("/api/report?capture=attach.mscap&views=lanes&lane_width=200")).lanes;
  const gapped = lanes.lanes.filter((l) => (l.gaps ?? "").includes("A"));
  assert.ok(gapped.length > 0, JSON.stringify(lanes.lanes.map((l) => l.gaps)));
  const name = page.locator(".lane-names div[title*='not yet attached']");
  await name.first().waitFor();
  assert.match(await name.first().getAttribute("title"), /gaps, not known \(not idle\): not yet attached/);
  // The hatching's colour (GAP_COLOR, #c0392b) on the canvas: in the
  // columns the gap covers (its first lane's letters), in none past them.
  const letters = gapped[0].gaps;
  const last = letters.lastIndexOf("A");
  const red = await page.evaluate(([last, columns]) => {
    const c = document.querySelector(".lanes canvas");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    const split = Math.ceil(((last + 1) / columns) * c.width) + 2;
    let inside = 0, outside = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i] > 150 && d[i + 1] < 110 && d[i + 2] < 100) ((i / 4) % c.width < split ? inside++ : outside++);
    }
    return { inside, outside };
  }, [last, letters.length]);
  assert.ok(red.inside > 20 && red.outside === 0, JSON.stringify(red));
  await shot("5c-gap");
});

test("a diff colours what changed", async () => {
  await page.goto(new URL("/?capture=threads.mscap&diff=split.mscap&view=tree", url).href);
  await ready();
  await page.waitForSelector("table.tree td.faster, table.tree td.slower");
  assert.ok((await page.locator("table.tree td.faster").count()) > 0, "functions only the first has");
  await page.getByRole("button", { name: "flame graph", exact: true }).click();
  await flameDrawn();
  await shot("5-diff");
});

test("the changes table lists both captures' functions with their side, sortable", async () => {
  await page.goto(new URL("/?capture=threads.mscap&diff=split.mscap&view=diff", url).href);
  await ready();
  await page.waitForSelector("table[aria-label=diff] tbody tr");
  const answer = await api("/api/report?capture=threads.mscap&diff=split.mscap&views=tree&min_percent=0.1&top=200");
  const rows = page.locator("table[aria-label=diff] tbody tr");
  assert.equal(await rows.count(), answer.diff.total.length);
  // threads and split are different programs: functions of each side only.
  assert.ok(await page.locator('tr[data-side="base"]').count(), "functions only this capture has");
  assert.ok(await page.locator('tr[data-side="other"]').count(), "functions only the other has");
  const onlyOther = answer.diff.total.find((r) => r.side === "other");
  const row = page.locator('tr[data-side="other"]').filter({ hasText: onlyOther.name }).first();
  assert.equal(await row.locator("td.side").textContent(), "only the other");
  // Sorted by the size of the change, then by the other capture's share.
  const changes = async () =>
    (await page.locator("table[aria-label=diff] tbody td:nth-child(3)").allTextContents()).map(
      (t) => Math.abs(parseFloat(t)));
  const byChange = await changes();
  assert.deepEqual(byChange, [...byChange].sort((a, b) => b - a));
  await page.locator("table[aria-label=diff] thead").getByRole("button", { name: "other" }).click();
  const others = (await page.locator("table[aria-label=diff] tbody td:nth-child(2)").allTextContents()).map(parseFloat);
  assert.deepEqual(others, [...others].sort((a, b) => b - a));
  assert.equal(await page.locator("table[aria-label=diff] thead th").nth(1).getAttribute("aria-sort"), "descending");
  await shot("5b-diff-table");
});

test("the inverted flame graph's roots hold all the self time, with one for what pruning left out", async () => {
  await page.goto(new URL("/?capture=gxx.mscap&callees=1", url).href);
  await ready();
  await flameDrawn();
  const answer = await api("/api/report?capture=gxx.mscap&views=inverted&min_percent=0.1&top=200");
  const sum = answer.inverted.reduce((a, r) => a + r.total.value, 0);
  assert.equal(sum, answer.all.value, "the roots add up to the whole");
  const pruned = answer.inverted.at(-1);
  assert.ok(pruned.pruned && pruned.function === "other (pruned)", JSON.stringify(pruned).slice(0, 200));
  assert.equal((await flameFrames()).filter((f) => f.name === "other (pruned)").length, 1);
  // Clicking it focuses on nothing: it is no function.
  await clickFrame("other (pruned)");
  await page.waitForTimeout(300);
  assert.equal(query().get("focus"), null);
  await shot("5d-inverted");
});

test("the flame graph follows the window's width", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  await flameDrawn();
  const width = () => page.evaluate(() => document.querySelector(".flame-canvas canvas").getBoundingClientRect().width);
  const wide = await width();
  await page.setViewportSize({ width: 800, height: 900 });
  await page.waitForFunction((w) => document.querySelector(".flame-canvas canvas")?.getBoundingClientRect().width < w - 200, wide);
  const narrow = await width();
  assert.ok(narrow <= 800 && narrow > 600, `${wide} px, then ${narrow} px in an 800 px window`);
  await shot("5e-resized");
  await page.setViewportSize({ width: 1280, height: 900 });
});

test("every thread is reachable from the thread picker, by keyboard", async () => {
  await page.goto(new URL("/?capture=threads.mscap&view=flat", url).href);
  await ready();
  const whole = await api("/api/report?capture=threads.mscap");
  const picker = page.getByRole("combobox", { name: "thread" });
  const options = await page.locator("datalist#threads option").evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(options.sort(), whole.header.threads.map((t) => `${t.name} (${t.tid})`).sort());
  const worker = whole.header.threads.find((t) => t.name === "worker-b");
  await picker.focus();
  await page.keyboard.type(`worker-b (${worker.tid})`);
  await page.keyboard.press("Enter");
  await page.waitForFunction((tid) => new URL(location.href).searchParams.get("thread") === String(tid), worker.tid);
  await ready();
  const filtered = await api(`/api/report?capture=threads.mscap&thread=${worker.tid}`);
  await page.waitForFunction((t) => document.querySelector('dd[data-field="filter"]')?.textContent === t,
    filtered.header.lines.find((l) => l.label === "filter").text);
  // The lane of the thread shown is marked; clicking another's name shows that one.
  assert.equal(await page.getByRole("button", { name: `worker-b (${worker.tid})`, exact: true }).getAttribute("aria-pressed"), "true");
  const other = whole.header.threads.find((t) => t.name === "worker-c");
  await page.getByRole("button", { name: `worker-c (${other.tid})`, exact: true }).click();
  await page.waitForFunction((tid) => new URL(location.href).searchParams.get("thread") === String(tid), other.tid);
  await shot("5f-thread");
});

test("with several processes the timeline groups threads under their process, which folds", async () => {
  await page.goto(new URL("/?capture=gxx.mscap&view=flat", url).href);
  await ready();
  const whole = await api("/api/report?capture=gxx.mscap");
  const answer = (await api("/api/report?capture=gxx.mscap&views=lanes&lane_width=400&top=1000")).lanes;
  const lanes = answer.lanes;
  const pids = new Set(lanes.slice(0, 64).map((l) => l.pid));
  assert.ok(pids.size >= 2, `${pids.size} processes drawn (the driver, cc1plus, as)`);
  // The server's process lanes: each the sum of its threads'.
  for (const p of answer.processes) {
    const sum = p.buckets.map((_, i) => lanes.filter((l) => l.pid === p.pid).reduce((n, l) => n + l.buckets[i], 0));
    assert.deepEqual(p.buckets, sum, p.name);
    assert.equal(p.name, whole.header.processes.find((q) => q.pid === p.pid).command);
  }
  const headings = page.locator(".lanes button.process-name");
  await headings.first().waitFor();
  assert.equal(await headings.count(), pids.size);
  // The busiest thread's process first (cc1plus), its threads under it.
  const busiest = whole.header.threads.find((t) => t.tid === lanes[0].tid);
  const first = headings.first();
  assert.ok((await first.textContent()).includes(`(${busiest.pid})`), await first.textContent());
  const thread = page.getByRole("button", { name: `${lanes[0].name} (${lanes[0].tid})`, exact: true });
  await thread.waitFor();
  const height = async () => (await page.locator(".lanes canvas").boundingBox()).height;
  const before = await height();
  await first.click();
  assert.equal(await first.getAttribute("aria-expanded"), "false");
  await thread.waitFor({ state: "detached" });
  assert.ok(await height() < before, "the canvas lost the folded threads' rows");
  await shot("5m-processes");
  await first.click();
  await thread.waitFor();
  // Hiding: a thread's track, then a process's with its threads; one
  // button shows them all again. By keyboard: Tab reaches each × button.
  const rows = async () => page.locator(".lanes .lane-names > div").count();
  const all = await rows();
  const hideThread = page.getByRole("button", { name: `hide thread ${lanes[0].name} (${lanes[0].tid})`, exact: true });
  await hideThread.focus();
  await page.keyboard.press("Enter");
  await thread.waitFor({ state: "detached" });
  // Its row, and its process's heading if it was the process's only thread drawn.
  const drawn = (pid) => lanes.slice(0, 64).filter((l) => l.pid === pid).length;
  const gone = drawn(busiest.pid) === 1 ? 2 : 1;
  assert.equal(await rows(), all - gone, "the thread's row gone");
  const show = page.getByRole("button", { name: "show 1 hidden track" });
  await show.waitFor();
  const other = [...pids].find((p) => p !== busiest.pid);
  const otherHeading = headings.filter({ hasText: `(${other})` });
  await page.getByRole("button", { name: new RegExp(`^hide process .* \\(${other}\\)$`) }).click();
  await otherHeading.waitFor({ state: "detached" });
  assert.equal(await rows(), all - gone - (drawn(other) + 1), "its heading and its threads' rows gone");
  assert.ok(await height() < before, "the canvas lost the hidden rows");
  await shot("5n-hidden-tracks");
  await page.getByRole("button", { name: "show 2 hidden tracks" }).click();
  await thread.waitFor();
  assert.equal(await rows(), all);
});

test("'/' goes to the search, Escape clears it; search filters the functions view", async () => {
  await page.goto(new URL("/?capture=threads.mscap&view=flat", url).href);
  await ready();
  const all = await page.locator("table.flat tbody tr").count();
  await page.locator("body").click({ position: { x: 5, y: 5 } });
  await page.keyboard.press("/");
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("aria-label")), "search functions");
  await page.keyboard.type("work_");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => new URL(location.href).searchParams.get("search") === "work_");
  const names = await page.locator("table.flat tbody td:last-child").allTextContents();
  // work_a, work_b, work_c, and any other function holding the text (a
  // kernel's task_work_run, when it was sampled).
  assert.ok(names.every((n) => n.toLowerCase().includes("work_")) &&
            ["work_a", "work_b", "work_c"].every((f) => names.some((n) => n.startsWith(f + " "))), names.join(", "));
  assert.ok(all > names.length);
  await page.getByRole("searchbox", { name: "search functions" }).focus();
  await page.keyboard.press("Escape");
  await page.waitForFunction(() => !new URL(location.href).searchParams.get("search"));
  await page.waitForFunction((n) => document.querySelectorAll("table.flat tbody tr").length === n, all);
});

test("a choice that does not apply is disabled, with the reason", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  const offcpu = page.getByRole("combobox", { name: "metric" }).locator('option[value="offcpu"]');
  assert.equal(await offcpu.isDisabled(), true);
  assert.match(await offcpu.getAttribute("title"), /no off-CPU data/);
  // A native program: neither Python's nor JavaScript's look.
  for (const [look, language] of [["python", "Python"], ["js", "JavaScript"]]) {
    const option = page.getByRole("combobox", { name: "look" }).locator(`option[value="${look}"]`);
    assert.equal(await option.isDisabled(), true, look);
    assert.match(await option.getAttribute("title"), new RegExp(`^no ${language} frames`));
  }
  // (Preact sets no value attribute where the value is the option's text.)
  assert.equal(await page.getByRole("combobox", { name: "look" }).locator("option", { hasText: /^native$/ }).isDisabled(), false);
});

test("the zones are drawn on their thread's lane, and a zone filters the views", async () => {
  await page.goto(new URL("/?capture=probes.mscap", url).href);
  await ready();
  const lanes = (await api("/api/report?capture=probes.mscap&views=lanes&lane_width=400&top=1000")).lanes;
  assert.deepEqual(lanes.zone_names, ["sleep", "spin"]);
  await page.getByLabel("zones").getByText("spin").waitFor();
  // The zone band's colours, at the foot of the zoned lane.
  const row = lanes.lanes.findIndex((l) => l.zones);
  const colours = await page.evaluate(([row]) => {
    const c = document.querySelector(".lanes canvas");
    const g = c.getContext("2d");
    const y = Math.round((row * 18 + 16) * devicePixelRatio);
    const px = g.getImageData(0, y, c.width, 1).data;
    const seen = new Set();
    for (let i = 0; i < px.length; i += 4) if (px[i + 3] === 255) seen.add(`${px[i]},${px[i + 1]},${px[i + 2]}`);
    return seen.size;
  }, [row]);
  assert.ok(colours >= 2, `zone colours on the lane's foot: ${colours}`);
  const asked = page.waitForRequest((r) => r.url().includes("zone=spin") && r.url().includes("views=tree"));
  await page.getByRole("combobox", { name: "zone" }).selectOption("spin");
  await asked;
  await page.waitForFunction(() => new URL(location.href).searchParams.get("zone") === "spin");
  await ready();
  const inSpin = await api("/api/report?capture=probes.mscap&zone=spin");
  await page.waitForFunction((t) => document.querySelector('dd[data-field="filter"]')?.textContent === t,
    inSpin.header.lines.find((l) => l.label === "filter").text);
  await shot("5g-zones");
  // The zone's sidebar: report --zones' figures; a percentile selects its occurrence.
  const spin = (await api("/api/report?capture=probes.mscap&views=zones")).zones.rows.find((r) => r.zone === "spin");
  const side = page.getByRole("region", { name: "selected zone" });
  await side.locator('dd[data-field="count"]').waitFor();
  assert.equal(await side.locator('dd[data-field="count"]').textContent(), String(spin.count));
  assert.equal(await side.locator('dd[data-field="p90"]').textContent(), spin.p90.text);
  await side.locator('dd[data-field="max"] button').click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("time"));
  const [from, to] = query().get("time").split("..").map((t) => parseFloat(t) * 1e9);
  assert.ok(Math.abs(from - spin.max.at_ns) < 2e3 && Math.abs(to - from - spin.max.duration_ns) < 4e3,
            `${query().get("time")} for the longest spin at ${spin.max.at_ns} for ${spin.max.duration_ns}`);
});

test("with the sidebar open, the stack chart and the marker chart keep the timeline's width", async () => {
  for (const [view, chart] of [["chart", ".stack-chart canvas"], ["markers", ".marker-chart canvas"]]) {
    await page.goto(new URL(`/?capture=probes.mscap&view=${view}&focus=main`, url).href);
    await ready();
    await page.waitForSelector(".sidebar");
    await page.waitForSelector(chart);
    const lanes = await page.locator(".lanes canvas").boundingBox();
    const drawn = await page.locator(chart).first().boundingBox();
    assert.ok(Math.abs(drawn.x - lanes.x) < 2 && Math.abs(drawn.x + drawn.width - lanes.x - lanes.width) < 2,
              `${view}: ${drawn.x}..${drawn.x + drawn.width}, the lanes ${lanes.x}..${lanes.x + lanes.width}`);
  }
  await shot("5o-sidebar-under-chart");
});

test("the stack chart draws a thread's samples in time order; it zooms without asking the server", async () => {
  const whole = await api("/api/report?capture=threads.mscap");
  const worker = whole.header.threads.find((t) => t.name === "worker-c");
  await page.goto(new URL(`/?capture=threads.mscap&view=chart&thread=${worker.tid}`, url).href);
  await ready();
  const canvas = page.locator(".stack-chart canvas");
  await page.waitForFunction(() => Number(document.querySelector(".stack-chart canvas")?.dataset.boxes) > 0);
  const chart = (await api(`/api/report?capture=threads.mscap&views=stack_chart&thread=${worker.tid}`)).stack_chart;
  assert.equal(chart.tid, worker.tid);
  assert.equal(chart.runs.reduce((a, r) => a + r[3], 0), chart.samples);
  // Hovering the leaf of the longest run names its function.
  const longest = chart.runs.reduce((a, r) => (r[1] - r[0] > a[1] - a[0] ? r : a));
  const stack = chart.stacks[longest[2]];
  const box = await canvas.boundingBox();
  const from = Number(await canvas.getAttribute("data-from")), to = Number(await canvas.getAttribute("data-to"));
  // Unzoomed, its axis is the timeline's: the whole recording, under the lanes.
  assert.deepEqual([from, to], [0, whole.header.duration_ns]);
  const lanesBox = await page.locator(".lanes canvas").boundingBox();
  assert.ok(Math.abs(box.x - lanesBox.x) < 2 && Math.abs(box.width - lanesBox.width) < 2,
            `chart ${box.x}+${box.width}, lanes ${lanesBox.x}+${lanesBox.width}`);
  const x = box.x + ((longest[0] + longest[1]) / 2 - from) / (to - from) * box.width;
  const y = box.y + (stack.length - 1) * 16 + 8;
  await page.mouse.move(x, y);
  const tip = page.getByRole("tooltip");
  await tip.waitFor();
  assert.equal(await tip.locator("strong").textContent(), chart.names[stack.at(-1)]);
  await shot("5h-stack-chart");
  // Drag across a quarter of it: zoomed in, with no request to the server.
  // (The page's poll of the captures' sizes aside.)
  let asked = 0;
  const count = (r) => !r.url().includes("/api/captures") && asked++;
  page.on("request", count);
  await page.mouse.move(box.x + box.width * 0.25, box.y + 4);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.5, box.y + 4, { steps: 5 });
  await page.mouse.up();
  await page.waitForFunction((f) => Number(document.querySelector(".stack-chart canvas").dataset.from) > f, from);
  const zoomedFrom = Number(await canvas.getAttribute("data-from")), zoomedTo = Number(await canvas.getAttribute("data-to"));
  const quarter = (to - from) / 4;
  assert.ok(Math.abs(zoomedFrom - (from + quarter)) < quarter / 10 && Math.abs(zoomedTo - (from + 2 * quarter)) < quarter / 10,
    `${zoomedFrom}..${zoomedTo} of ${from}..${to}`);
  assert.equal(await page.getByRole("navigation", { name: "zoom levels" }).getByRole("button").count(), 2);
  await shot("5i-stack-chart-zoomed");
  page.off("request", count);
  assert.equal(asked, 0, "zooming asked the server nothing");
  // Escape zooms out again.
  await page.locator(".stack-chart").focus();
  await page.keyboard.press("Escape");
  await page.waitForFunction((f) => Number(document.querySelector(".stack-chart canvas").dataset.from) === f, from);
  // A click on a frame focuses the views on its function.
  await page.mouse.click(x, y);
  await page.waitForFunction((n) => new URL(location.href).searchParams.get("focus") === n, chart.names[stack.at(-1)]);
});

test("the selected function's sidebar: its cost as share, time and samples, its callers and callees", async () => {
  await page.goto(new URL("/?capture=threads.mscap&focus=work_b", url).href);
  await ready();
  const side = page.getByRole("complementary", { name: "selected function" });
  await side.locator('dd[data-field="total"]').waitFor();
  const n = (await api("/api/report?capture=threads.mscap&views=threads&neighbors=work_b&top=20")).neighbors;
  assert.equal(n.function, "work_b");
  const total = await side.locator('dd[data-field="total"]').textContent();
  assert.ok(total.startsWith(n.total.text) && total.endsWith(`${n.total.samples} samples`) && / ms · /.test(total), total);
  const callers = await side.getByRole("region", { name: "callers" }).getByRole("button").allTextContents();
  assert.deepEqual(callers, n.callers.map((c) => c.function));
  assert.ok(callers.includes("thread_b"), callers.join(", "));
  const callees = await side.getByRole("region", { name: "callees" }).getByRole("button").allTextContents();
  assert.deepEqual(callees, n.callees.map((c) => c.function));
  await shot("5j-sidebar");
  await side.getByRole("button", { name: "thread_b", exact: true }).click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("focus") === "thread_b");
  await side.getByRole("button", { name: "source lines" }).click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("view") === "source");
});

test("the marker table lists the program's zones with their times; a row selects its range", async () => {
  await page.goto(new URL("/?capture=probes.mscap&view=markers", url).href);
  await ready();
  const table = page.getByRole("table", { name: "markers" });
  await table.locator("tbody tr").first().waitFor();
  const markers = (await api("/api/report?capture=probes.mscap&views=markers")).markers;
  const zones = markers.rows.filter((r) => r[0] === "zone");
  assert.ok(zones.length >= 400, `${zones.length} zones (200 sleep and 200 spin)`);
  assert.equal(await table.locator('tbody tr[data-kind="zone"]').count(), Math.min(2000, zones.length));
  // The first by start, as the answer has it.
  const first = markers.rows[0];
  assert.equal(await table.locator("tbody tr").first().locator("td").nth(4).textContent(), first[5]);
  // By duration: the longest zone first (which one is the machine's: a
  // 1 ms spin preempted on a loaded machine can outlast a 2 ms sleep).
  await table.getByRole("button", { name: "duration" }).click();
  const zoneRows = table.locator('tbody tr[data-kind="zone"]');
  const longest = zones.reduce((a, b) => (b[3] - b[2] > a[3] - a[2] ? b : a));
  assert.equal(await zoneRows.first().locator("td").nth(4).textContent(), longest[5]);
  const durations = (await table.locator("tbody tr td:nth-child(2)").allTextContents()).slice(0, 50);
  const ns = (t) => parseFloat(t) * { s: 1e9, ms: 1e6, "µs": 1e3, ns: 1 }[t.split(" ")[1]];
  assert.deepEqual(durations.map(ns), [...durations.map(ns)].sort((a, b) => b - a));
  await shot("5k-markers");
  // A row selects its time range: every view follows.
  await zoneRows.first().click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("time"));
  const [from, to] = query().get("time").split("..").map((t) => parseFloat(t) * 1e9);
  assert.ok(to - from > 1.5e6 && to - from < 50e6, query().get("time"));
  // Unchecking a kind leaves it out.
  await page.goto(new URL("/?capture=probes.mscap&view=markers", url).href);
  await ready();
  await table.locator("tbody tr").first().waitFor();
  await page.getByRole("checkbox", { name: "zone" }).uncheck();
  await page.waitForFunction(() => !document.querySelector('table[aria-label=markers] tbody tr[data-kind="zone"]'));
});

test("the marker chart draws each thread's zones where they happened; hovering names one, a click selects it", async () => {
  await page.goto(new URL("/?capture=probes.mscap&view=markers", url).href);
  await ready();
  const answer = await api("/api/report?capture=probes.mscap&views=markers");
  const span = answer.header.duration_ns;
  const zone = answer.markers.rows.filter((r) => r[0] === "zone" && r[4] === 0)
                   .reduce((a, b) => (b[3] - b[2] > a[3] - a[2] ? b : a));
  const chart = page.getByRole("img", { name: /marker chart/ });
  await chart.waitFor();
  // Its thread's first zone row.
  const titles = await page.locator(".marker-chart .chart-label").evaluateAll((ls) => ls.map((l) => l.title));
  const row = titles.findIndex((t) => t.includes(`(${zone[1]}): zones (`));
  assert.ok(row >= 0, titles.join("; "));
  const box = await chart.boundingBox();
  const x = ((zone[2] + zone[3]) / 2 / span) * box.width;
  const y = row * 14 + 7;
  // Painted where the zone was, in its row.
  const painted = await chart.evaluate((c, [x, y]) => {
    const d = c.getContext("2d").getImageData(Math.round(x * devicePixelRatio), Math.round(y * devicePixelRatio), 1, 1).data;
    return d[3];
  }, [x, y]);
  assert.ok(painted > 0, `alpha ${painted} at the zone's middle`);
  await page.mouse.move(box.x + x, box.y + y);
  const tip = page.getByRole("tooltip");
  await tip.waitFor();
  const text = await tip.textContent();
  assert.ok(text.includes(zone[5]) && text.includes("zone on"), text);
  await shot("5l-marker-chart");
  await page.mouse.click(box.x + x, box.y + y);
  await page.waitForFunction(() => new URL(location.href).searchParams.get("time"));
  const [from, to] = query().get("time").split("..").map((t) => parseFloat(t) * 1e9);
  assert.ok(Math.abs(from - zone[2]) < 1e6 && Math.abs(to - zone[3]) < 1e6, `${query().get("time")} for ${zone[2]}..${zone[3]}`);
});

test("the page exports what it shows: pprof of the selection as the API writes it, the flame graph as SVG", async () => {
  await page.goto(new URL("/?capture=threads.mscap&time=0.05..0.25&thread=" + (await api("/api/report?capture=threads.mscap")).header.threads[0].tid, url).href);
  await ready();
  await flameDrawn();
  await page.getByText("export", { exact: true }).click();
  const link = page.getByRole("menuitem", { name: /pprof/ });
  const href = await link.getAttribute("href");
  const asked = new URL(href, url).searchParams;
  assert.equal(asked.get("format"), "pprof");
  assert.equal(asked.get("time"), "0.05..0.25");
  assert.ok(asked.get("thread"), href);
  const [pprof] = await Promise.all([page.waitForEvent("download"), link.click()]);
  assert.equal(pprof.suggestedFilename(), "threads.pb.gz");
  const bytes = await import("node:fs").then((fs) => pprof.path().then((p) => fs.readFileSync(p)));
  assert.deepEqual([...bytes.subarray(0, 2)], [0x1f, 0x8b], "gzip");
  const direct = await page.evaluate(async (h) => new Uint8Array(await (await fetch(h)).arrayBuffer()).length, href);
  assert.equal(bytes.length, direct);
  // The menu stays open after a download.
  const [svg] = await Promise.all([page.waitForEvent("download"),
                                   page.getByRole("menuitem", { name: "flame graph (.svg)" }).click()]);
  assert.equal(svg.suggestedFilename(), "threads-flame.svg");
  const text = await import("node:fs").then((fs) => svg.path().then((p) => fs.readFileSync(p, "utf8")));
  assert.ok(text.startsWith("<?xml") && text.includes("<svg"), text.slice(0, 100));
  assert.ok(!text.includes("foreignObject"), "labels as SVG text");
  assert.ok(/<text[^>]*>work_[abc]<\/text>/.test(text), "a frame's label is SVG text");
  const [png] = await Promise.all([page.waitForEvent("download"),
                                   page.getByRole("menuitem", { name: "flame graph (.png)" }).click()]);
  assert.equal(png.suggestedFilename(), "threads-flame.png");
  const image = await import("node:fs").then((fs) => png.path().then((p) => fs.readFileSync(p)));
  assert.deepEqual([...image.subarray(1, 4)], [0x50, 0x4e, 0x47], "PNG");
  // Its width in pixels: the graph's, at the page's pixel ratio.
  const graphWidth = await page.evaluate(() => document.querySelector(".flame-canvas canvas").width);
  assert.equal(image.readUInt32BE(16), Math.ceil(graphWidth));
});

test("the call graph's transforms: merge a function into its callers, undo it; all in the URL", async () => {
  await page.goto(new URL("/?capture=threads.mscap&focus=work_b", url).href);
  await ready();
  const side = page.getByRole("complementary", { name: "selected function" });
  await side.getByRole("button", { name: "merge into callers" }).click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("merge") === "work_b");
  assert.equal(query().get("focus"), null, "the merged function's focus goes");
  await ready();
  const merged = await api("/api/report?capture=threads.mscap&views=tree&merge=work_b&min_percent=0.1&top=200");
  await flameHas("work_b", false);
  assert.ok(!merged.functions.some((f) => f.function === "work_b"));
  const chip = page.getByRole("button", { name: "undo: merged work_b" });
  await shot("5n-merged");
  await chip.click();
  await page.waitForFunction(() => !new URL(location.href).searchParams.get("merge"));
  await flameHas("work_b");
  await page.getByRole("checkbox", { name: "collapse recursion" }).check();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("recursion") === "1");
});

test("reloading the URL gives the same view", async () => {
  const link = new URL("/?capture=threads.mscap&view=tree&focus=work_a&order=self", url).href;
  await page.goto(link);
  await ready();
  await page.waitForSelector("table.tree tbody tr");
  const before = await page.locator("table.tree tbody").textContent();
  await page.reload();
  await ready();
  await page.waitForSelector("table.tree tbody tr");
  assert.equal(page.url(), link);
  assert.equal(await page.locator("table.tree tbody").textContent(), before);
  assert.equal(await page.getByRole("button", { name: "self", exact: true }).locator("..").getAttribute("aria-sort"), "descending");
  await shot("6-reloaded");
});

test("the tree is keyboard operable", async () => {
  const first = page.locator("table.tree tbody tr").first();
  await first.focus();
  await page.keyboard.press("ArrowDown");
  const focused = await page.evaluate(() => document.activeElement?.getAttribute("data-row"));
  assert.equal(focused, "1");
});

test("the source view shows the focused function's lines with their costs", async () => {
  await page.goto(new URL("/?capture=threads.mscap&view=source&focus=burn_units", url).href);
  await ready();
  await page.waitForSelector("table.source tr.costed");
  const src = (await api("/api/report?capture=threads.mscap&views=threads&source=burn_units")).source;
  const hot = src.files[0].lines.reduce((a, b) => (b.total.value > a.total.value ? b : a));
  const row = page.locator(`table.source tr[data-line="${hot.line}"] td`);
  const cells = await row.allTextContents();
  assert.deepEqual(cells, [hot.self.text, hot.total.text, String(hot.line),
                           src.files[0].text[hot.line - src.files[0].first]]);
  await shot("7-source");
  // Without a focus, the view says how to choose a function.
  await page.goto(new URL("/?capture=threads.mscap&view=source", url).href);
  await page.getByText("Click a function").waitFor();
});

test("the assembly view: the function's instructions with their samples, opened from the sidebar", async () => {
  await page.goto(new URL("/?capture=threads.mscap&focus=work_c", url).href);
  await ready();
  const side = page.getByRole("complementary", { name: "selected function" });
  await side.getByRole("button", { name: "assembly" }).click();
  await page.waitForFunction(() => new URL(location.href).searchParams.get("view") === "asm");
  await page.waitForSelector("table.asm tr.costed");
  const asm = (await api("/api/report?capture=threads.mscap&views=threads&asm=work_c")).assembly;
  const range = asm.modules[0].ranges[0];
  assert.equal(range.symbol, "work_c");
  const hot = range.instructions.filter((i) => i.total).reduce((a, b) => (b.total.value > a.total.value ? b : a));
  const cells = await page.locator(`table.asm tr[data-address="${hot.address.toString(16)}"] td`).allTextContents();
  assert.deepEqual(cells, [hot.self.text, hot.total.text, hot.address.toString(16), hot.text]);
  assert.equal(await page.locator("table.asm tbody tr").count(), range.instructions.length);
  await shot("7b-assembly");
});

test("dark mode: the page's ground and text turn; kinds of code and off-CPU states keep their colours", async () => {
  const look = async () => {
    await page.goto(new URL("/?capture=threads.mscap", url).href);
    await ready();
    await flameDrawn();
    return page.evaluate(() => {
      const color = (el) => getComputedStyle(el).color;
      const background = (el) => getComputedStyle(el).backgroundColor;
      return {
        frames: Object.fromEntries(globalThis.microscopeFlame().map((f) => [f.name, f.fill])),
        kinds: [...document.querySelectorAll(".kind-legend i")].map(background),
        states: [...document.querySelectorAll(".state-legend i")].map(background),
        ground: background(document.body),
        text: color(document.body),
        lanesText: color(document.querySelector(".lanes canvas")),
      };
    });
  };
  // The relative luminance of an rgb() colour (WCAG).
  const luminance = (rgb) => {
    const [r, g, b] = rgb.match(/\d+/g).slice(0, 3).map((v) => {
      const c = Number(v) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  await page.emulateMedia({ colorScheme: "light" });
  const light = await look();
  await page.emulateMedia({ colorScheme: "dark" });
  try {
    const dark = await look();
    assert.deepEqual(dark.frames, light.frames);
    assert.ok(dark.kinds.length > 0);
    assert.deepEqual(dark.kinds, light.kinds);
    assert.deepEqual(dark.states, light.states);
    assert.ok(luminance(dark.ground) < 0.05 && luminance(dark.text) > 0.6, `${dark.ground} ${dark.text}`);
    assert.ok(luminance(light.ground) > 0.9 && luminance(light.text) < 0.1, `${light.ground} ${light.text}`);
    // The timeline's canvas draws its axis and names in the page's text colour.
    assert.equal(dark.lanesText, dark.text);
    await shot("9-dark");
  } finally {
    await page.emulateMedia({ colorScheme: null });
  }
});

test("the flame graph is one Tab stop; arrows move by position, Enter zooms, F focuses the views", async () => {
  await page.goto(new URL("/?capture=threads.mscap", url).href);
  await ready();
  await flameHas("work_a");
  const canvas = flameCanvas();
  assert.equal(await canvas.getAttribute("tabindex"), "0");
  const current = async () => (await flameFrames()).find((f) => f.current);
  await canvas.focus();
  await page.waitForFunction(() => globalThis.microscopeFlame().some((f) => f.current));
  assert.equal((await current()).name, "all");
  // Down to the leftmost callee, then right along its siblings: their
  // places on the screen go left to right.
  await page.keyboard.press("ArrowDown");
  const xs = [];
  const names = [];
  for (let i = 0; i < 6; i++) {
    const c = await current();
    names.push(c.name);
    xs.push(c.x);
    await page.keyboard.press("ArrowRight");
  }
  assert.deepEqual(xs, [...xs].sort((a, b) => a - b), names.join(", "));
  await page.keyboard.press("ArrowUp");
  assert.equal((await current()).name, "all");
  // The current frame is said for screen readers.
  assert.match(await page.locator(".flame-canvas [aria-live]").textContent(), /^all/);
  // To work_a by arrows, wherever it is.
  const path = (await flameFrame("work_a")).path;
  for (const name of path) {
    await page.keyboard.press("ArrowDown");
    for (let i = 0; i < 50 && (await current()).name !== name; i++) await page.keyboard.press("ArrowRight");
    assert.equal((await current()).name, name);
  }
  assert.match(await page.locator(".flame-canvas [aria-live]").textContent(), /^work_a.*: [\d.]+%$/);
  await page.keyboard.press("Enter");
  await page.getByRole("status").filter({ hasText: "zoomed into work_a" }).waitFor();
  assert.equal((await current()).name, "work_a");
  await page.keyboard.press("f");
  await page.waitForFunction(() => new URL(location.href).searchParams.get("focus") === "work_a");
});

test("the metric and look choices are in the URL and the queries", async () => {
  await page.goto(new URL("/?capture=threads.mscap&view=flat", url).href);
  await ready();
  const asked = page.waitForRequest((r) => r.url().includes("look=native"));
  await page.getByRole("combobox", { name: "look" }).selectOption("native");
  await asked;
  await page.waitForFunction(() => new URL(location.href).searchParams.get("look") === "native");
  await ready();
  assert.equal(await page.getByRole("combobox", { name: "look" }).inputValue(), "native");
});

test("with several captures served, the page asks which, and which to compare with", async () => {
  await page.goto(new URL("/", url).href);
  await page.getByText("5 captures are served: choose one.").waitFor();
  await page.getByRole("combobox", { name: "capture", exact: true }).selectOption("threads.mscap");
  await page.waitForFunction(() => new URL(location.href).searchParams.get("capture") === "threads.mscap");
  await ready();
  await page.getByRole("combobox", { name: "compare with" }).selectOption("split.mscap");
  await page.waitForFunction(() => new URL(location.href).searchParams.get("diff") === "split.mscap");
  await page.getByRole("button", { name: "call tree", exact: true }).click();
  await page.waitForSelector("table.tree td.faster, table.tree td.slower");
});

test("a continuous directory growing: the page shows its new segments without a reload", async () => {
  // Its own server and token: a context of its own (the cookie is per host).
  const { copyFileSync, readdirSync } = await import("node:fs");
  const live = new URL(process.env.LIVE_URL);
  const liveToken = live.searchParams.get("token");
  const liveApi = async (q) =>
    (await fetch(new URL(q, live), { headers: { Authorization: `Bearer ${liveToken}` } })).json();
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const p = await context.newPage();
  p.on("pageerror", (e) => errors.push(String(e)));
  try {
    await p.goto(live.href);
    await p.waitForSelector('main[data-ready="yes"]');
    const samples = () => p.locator('dd[data-field="samples"]').textContent();
    const before = await liveApi("/api/report");
    assert.ok((await samples()).startsWith(`${before.header.samples} (`), await samples());
    let navigations = 0;
    p.on("framenavigated", () => navigations++);
    for (const name of readdirSync(process.env.STAGED_DIR))
      copyFileSync(`${process.env.STAGED_DIR}/${name}`, `${process.env.LIVE_DIR}/${name}`);
    await p.getByRole("status").filter({ hasText: "the recording grew" }).waitFor({ timeout: 15000 });
    const after = await liveApi("/api/report");
    assert.ok(after.header.samples > before.header.samples,
              `${after.header.samples} samples after, ${before.header.samples} before`);
    await p.waitForFunction((n) => document.querySelector('dd[data-field="samples"]')?.textContent
      .startsWith(`${n} (`), after.header.samples);
    assert.equal(navigations, 0, "no reload");
    await p.screenshot({ path: `${shots}/8-grown.png` });
  } finally {
    await context.close();
  }
});

test("no error in the page", () => {
  assert.deepEqual(errors, []);
});
