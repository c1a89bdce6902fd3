'use strict';
// microscope probes for Node.js: zones, marks, labels and counters that
// `microscope record --probes` puts on the same timeline as the samples.
//
//   const microscope = require('microscope');
//   const parse = microscope.zone('parse');   // a site, keyed by this file and line
//   parse.run(() => work());                 // a zone around a call (a promise: until it settles)
//   parse.begin(); ...; parse.end();         // or by hand
//   const handler = parse.wrap(fn);          // each call a zone
//   microscope.mark('frame done');
//   microscope.label('route', '/users');  microscope.clearLabel('route');
//   microscope.counter('queue depth', 17);
//
// A site is defined where zone() is called (its name, the caller's file
// and line); marks, labels and counters where each name is first used.
// Without the native addon (microscope.node, built from sdk/c's header), or
// with no recorder listening, every call does nothing. `available` says
// whether the addon loaded; recording() whether a recorder listens now.

const path = require('path');

function load() {
  const tries = [];
  if (process.env.MICROSCOPE_NODE_ADDON) tries.push(process.env.MICROSCOPE_NODE_ADDON);
  tries.push(path.join(__dirname, 'microscope.node'));
  for (const file of tries) {
    try {
      return require(file);
    } catch (e) {
      // not there, or not loadable here: the next, then nothing
    }
  }
  return null;
}

const native = load();
const ZONE = 1, MARK = 2, LABEL = 3, COUNTER = 4;

// The file and line of the code that called the API.
function caller() {
  const savedPrepare = Error.prepareStackTrace;
  const savedLimit = Error.stackTraceLimit;
  Error.prepareStackTrace = (_, frames) => frames;
  Error.stackTraceLimit = 4;
  const holder = {};
  Error.captureStackTrace(holder, caller);
  const frames = holder.stack;
  Error.prepareStackTrace = savedPrepare;
  Error.stackTraceLimit = savedLimit;
  const frame = Array.isArray(frames) && frames.length > 1 ? frames[1] : null;
  return frame ? [frame.getFileName() || '', frame.getLineNumber() || 0] : ['', 0];
}

function define(kind, name, file, line) {
  return native ? native.define(kind, String(name), String(file), line >>> 0) : 0;
}

class Zone {
  constructor(name, file, line) {
    this.name = name;
    this.site = define(ZONE, name, file, line);
    this.open = [];  // per begin not yet ended: whether it was recorded
  }
  begin() { this.open.push(this.site !== 0 && native.begin(this.site)); }
  end() {
    if (this.open.pop()) native.end(this.site);
  }
  run(fn, ...args) {
    const begun = this.site !== 0 && native.begin(this.site);
    let result;
    try {
      result = fn(...args);
    } catch (e) {
      if (begun) native.end(this.site);
      throw e;
    }
    if (begun && result && typeof result.then === 'function') {
      return result.finally(() => native.end(this.site));
    }
    if (begun) native.end(this.site);
    return result;
  }
  wrap(fn) {
    const zone = this;
    return function zoned(...args) { return zone.run(() => fn.apply(this, args)); };
  }
}

function zone(name) {
  const [file, line] = caller();
  return new Zone(name, file, line);
}

const named = new Map();  // kind and name -> site
function siteNamed(kind, name) {
  const key = kind + '\u0000' + name;
  let site = named.get(key);
  if (site === undefined) {
    const [file, line] = caller();
    site = define(kind, name, file, line);
    named.set(key, site);
  }
  return site;
}

function mark(name) {
  if (native) native.mark(siteNamed(MARK, name));
}

function counter(name, value) {
  if (native) native.counter(siteNamed(COUNTER, name), Number(value));
}

function label(key, value) {
  if (!native) return;
  native.label(siteNamed(LABEL, key), Number.isInteger(value) ? value : String(value));
}

function clearLabel(key) {
  if (native) native.labelClear(siteNamed(LABEL, key));
}

function recording() { return native !== null && native.recording(); }

module.exports = {
  zone,
  mark,
  counter,
  label,
  clearLabel,
  recording,
  available : native !== null
};
