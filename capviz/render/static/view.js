/* capviz interactive graph view. Self-contained: no network, no framework, no server.
 * Data: the JSON written by capviz/render/view_data.py. Every user string is set with
 * textContent or as an SVG text node, never parsed as markup.
 * Layout: each scope's contents are laid out on their own (a layered layout: rank = longest path
 * from the scope's sources, rows ordered by the mean position of their predecessors) and the
 * result is cached by the scope's structure, so identical blocks are laid out once. Only open
 * scopes are laid out and drawn. */
(function () {
  "use strict";
  if (window.CapvizView) return;
  var SVGNS = "http://www.w3.org/2000/svg";
  var NODE_H = 40, STUB_H = 14, SCOPE_H = 44, HEAD = 20, ROW = 14, ROWB = 14, PAD = 12, GAP_X = 16, GAP_Y = 30;
  var CHAR_W = 6.6, MINI_W = 180, MINI_H = 120, MAX_FIT = 1.5;
  var KIND_NAMES = ["input", "constant", "op", "output", "violation"];  // data.kinds, when given
  var liveState = window.__capvizLiveState = window.__capvizLiveState || {};

  function el(tag, attrs, text, parent) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (text != null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function sv(tag, attrs, parent) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function svText(parent, x, y, text, cls) {
    var t = sv("text", {x: x, y: y}, parent);
    if (cls) t.setAttribute("class", cls);
    t.textContent = text;
    return t;
  }
  /* a node's outline by its kind's shape (capviz/render/rules.py): a rect for boxes; otherwise
   * a transparent rect (its box, for hit tests and tests) under the drawn outline */
  function shape(g, name, b) {
    var x = b[0], y = b[1], w = b[2], h = b[3];
    if (name === "round" || name === "box" || !name) {
      return sv("rect", {"class": "cv-shape", x: x, y: y, width: w, height: h, rx: name === "box" ? 2 : 6}, g);
    }
    sv("rect", {"class": "cv-hit", x: x, y: y, width: w, height: h}, g);
    var c = 7, pts;
    if (name === "store") {
      var r = w / 2, e = 5;
      return sv("path", {"class": "cv-shape", d: "M" + x + "," + (y + e) + " A" + r + "," + e + " 0 0 1 " + (x + w) + "," + (y + e) +
        " L" + (x + w) + "," + (y + h - e) + " A" + r + "," + e + " 0 0 1 " + x + "," + (y + h - e) + " Z M" + x + "," + (y + e) +
        " A" + r + "," + e + " 0 0 0 " + (x + w) + "," + (y + e)}, g);
    }
    if (name === "hexagon") pts = [[x + c, y], [x + w - c, y], [x + w, y + h / 2], [x + w - c, y + h], [x + c, y + h], [x, y + h / 2]];
    else if (name === "diamond") pts = [[x + w / 2, y], [x + w, y + h / 2], [x + w / 2, y + h], [x, y + h / 2]];
    else pts = [[x + c, y], [x + w - c, y], [x + w, y + c], [x + w, y + h - c], [x + w - c, y + h], [x + c, y + h], [x, y + h - c], [x, y + c]];
    return sv("polygon", {"class": "cv-shape", points: pts.map(function (p) { return p.join(","); }).join(" ")}, g);
  }
  function clip(text, n) { return text.length > n ? text.slice(0, n - 1) + "\u2026" : text; }
  function fmt(x) {
    if (x === null || x === undefined) return "n/a";
    var a = Math.abs(x);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(3);
    return String(Math.round(x * 1e4) / 1e4);
  }

  /* ---- the model: nodes, users, scope tree (with program-order groups), lifted edges ---- */
  function Model() {}
  /* Built in steps (a generator) so that no main-thread task runs long on a big graph. */
  function* modelSteps(d) {
    var S = d.strings, n = d.kind.length, i, j, off;
    this.d = d; this.n = n; this.S = S;
    this.kind = d.kind;
    this.kindNames = d.kinds || KIND_NAMES;  // the kinds' names and shapes come from rules.py
    this.label = function (i) { return S[d.label[i]]; };
    this.type = function (i) { return S[d.type[i]]; };
    var aside = new Uint8Array(n);  // read constants are annotations; high degree: stubs
    for (i = 0; i < d.aside.length; i++) aside[d.aside[i]] = 1;
    this.aside = aside;
    var unpack = new Uint8Array(n);  // an unpack is drawn as its op (edges start there)
    for (i = 0; i < (d.unpacks || []).length; i++) unpack[d.unpacks[i]] = 1;
    this.unpack = unpack;
    var drawn = this.drawn = function (i) { return !(aside[i] && d.kind[i] === 1) && !unpack[i]; };
    var args = new Array(n);
    var indeg = new Int32Array(n + 1);
    for (i = 0, off = 0; i < n; i++) {  // operands: a count per node, then distances back
      var k = d.argc[i], list = new Array(k);
      for (j = 0; j < k; j++) { list[j] = i - d.argd[off + j]; indeg[list[j]]++; }
      off += k;
      args[i] = list;
      if ((i & 4095) === 4095) yield;
    }
    this.args = args;
    var start = new Int32Array(n + 1);
    for (i = 0; i < n; i++) start[i + 1] = start[i] + indeg[i];
    var fill = start.slice(0, n), users = new Int32Array(start[n]);
    for (i = 0; i < n; i++) for (j = 0; j < args[i].length; j++) users[fill[args[i][j]]++] = i;
    this.userStart = start; this.users = users;

    // boxes: the outline decided in Python (capviz/render/model.py, one set of rules for the
    // view and the static SVG): scopes, "name × N" folds (kind 2, the first member and a kind 3
    // box with the rest), program-order groups (kind 4). Nothing is folded or grouped here.
    var parent = d.scopes.parent.slice(), names = d.scopes.name.map(function (k) { return S[k]; });
    var virt = d.scopes.kind.map(function (k) { return k >= 2; });
    var fold = d.scopes.kind.map(function (k) { return k === 2; });
    var nodeScope = Int32Array.from(d.scope);
    var first = new Array(parent.length).fill(-1);
    var items = names.map(function () { return []; });   // item: node i >= 0, box s as ~s
    for (i = 0; i < n; i++) {
      if (!drawn(i)) continue;
      var s = nodeScope[i];
      var chain = [];
      for (var a2 = s; a2 > 0 && first[a2] < 0; a2 = parent[a2]) { first[a2] = i; chain.push(a2); }
      for (j = chain.length - 1; j >= 0; j--) items[parent[chain[j]]].push(~chain[j]);
      items[s].push(i);
      if ((i & 4095) === 4095) yield;
    }
    first[0] = 0;
    yield;
    var self = this;
    var ns = parent.length;
    this.parent = parent; this.names = names; this.virt = virt; this.fold = fold; this.items = items;
    this.nodeScope = nodeScope; this.first = first; this.ns = ns;
    // depth, local positions, sizes, paths (preorder from the root)
    var depth = new Int32Array(ns), local = new Int32Array(ns), nodeLocal = new Int32Array(n);
    var count = new Int32Array(ns), last = new Int32Array(ns), path = new Array(ns);
    path[0] = "";
    var order = [0];
    for (var o = 0; o < order.length; o++) {
      var sc = order[o], its = items[sc];
      for (var t = 0; t < its.length; t++) {
        var it = its[t];
        if (it >= 0) { nodeLocal[it] = t; continue; }
        var c = ~it;
        depth[c] = depth[sc] + 1; local[c] = t; order.push(c);
        path[c] = "";
      }
      if ((o & 2047) === 2047) yield;
    }
    for (o = order.length - 1; o >= 0; o--) {
      var s2 = order[o], its2 = items[s2], cnt = 0, lastIdx = -1;
      for (t = 0; t < its2.length; t++) {
        if (its2[t] >= 0) { if (d.kind[its2[t]] === 2) cnt++; lastIdx = Math.max(lastIdx, its2[t]); }
        else { cnt += count[~its2[t]]; lastIdx = Math.max(lastIdx, last[~its2[t]]); }
      }
      count[s2] = cnt; last[s2] = lastIdx;
      if ((o & 2047) === 2047) yield;
    }
    for (o = 0; o < order.length; o++) {
      var s3 = order[o];
      var up = parent[s3];
      while (up > 0 && virt[up]) up = parent[up];  // a scope's path is its call-stack path
      if (s3) path[s3] = (path[up] ? path[up] + "/" : "") + names[s3];
      if ((o & 2047) === 2047) yield;
    }
    this.depth = depth; this.local = local; this.nodeLocal = nodeLocal; this.count = count;
    this.path = path; this.order = order;
    // edges lifted to the items of their lowest common scope
    var scopeEdges = names.map(function () { return []; });
    var edges = [];
    function addEdge(u, v, type) {
      if (!drawn(u) || !drawn(v)) return;
      edges.push([u, v, type]);
      var a = nodeScope[u], b = nodeScope[v], ia = u, ib = v, la, lb;
      while (depth[a] > depth[b]) { ia = ~a; a = parent[a]; }
      while (depth[b] > depth[a]) { ib = ~b; b = parent[b]; }
      while (a !== b) { ia = ~a; a = parent[a]; ib = ~b; b = parent[b]; }
      if (ia === ib) return;
      la = ia >= 0 ? nodeLocal[ia] : local[~ia];
      lb = ib >= 0 ? nodeLocal[ib] : local[~ib];
      scopeEdges[a].push(la, lb);
    }
    for (i = 0; i < n; i++) {
      for (j = 0; j < args[i].length; j++) if (!aside[args[i][j]]) addEdge(args[i][j], i, 0);
      if ((i & 4095) === 4095) yield;
    }
    for (i = 0; i < d.links.length; i++) addEdge(d.links[i][0], d.links[i][1], 1);
    this.edges = edges; this.scopeEdges = scopeEdges;
    // problems: violations, non-finite mark, and the path from the inputs to the first NaN
    var bad = new Uint8Array(ns), onPath = new Uint8Array(n), pathScope = new Uint8Array(ns);
    function markUp(i, arr) { for (var a = nodeScope[i]; a > 0 && !arr[a]; a = parent[a]) arr[a] = 1; }
    for (i = 0; i < d.violations.length; i++) if (d.violations[i].level === "error") markUp(d.violations[i].node, bad);
    // the path: nodes upstream of the first NaN and downstream of a non-finite source (an
    // input or constant holding NaN/Inf); with no source, the op made it: the path is itself
    var nan = d.marks.nonfinite, source = new Uint8Array(n), sources = d.sources || [];
    if (nan !== undefined && nan < n) {
      markUp(nan, bad);
      var up = new Uint8Array(n), stack = [nan], down = new Uint8Array(n);
      up[nan] = 1;
      while (stack.length) {
        var v = stack.pop();
        for (j = 0; j < args[v].length; j++) if (!up[args[v][j]]) { up[args[v][j]] = 1; stack.push(args[v][j]); }
      }
      for (j = 0; j < sources.length; j++) if (up[sources[j]]) { source[sources[j]] = 1; down[sources[j]] = 1; stack.push(sources[j]); }
      while (stack.length) {
        var w2 = stack.pop();
        for (var q2 = start[w2]; q2 < start[w2 + 1]; q2++) if (!down[users[q2]]) { down[users[q2]] = 1; stack.push(users[q2]); }
      }
      onPath[nan] = 1;
      for (i = 0; i < n; i++) if (up[i] && down[i]) onPath[i] = 1;
      for (i = 0; i < n; i++) if (onPath[i] && drawn(i)) markUp(i, pathScope);
    }
    this.bad = bad; this.onPath = onPath; this.pathScope = pathScope; this.nan = nan; this.source = source;
    this.level = {};
    for (i = 0; i < d.violations.length; i++) this.level[d.violations[i].node] = d.violations[i].level;
    this.hay = null;
    void self;
  }
  Model.build = function (d) {  // all at once (tests, small graphs)
    var m = new Model(), it = modelSteps.call(m, d);
    while (!it.next().done) { /* steps */ }
    return m;
  };
  Model.prototype.stubIds = function (i) {
    var out = [], a = this.args[i];
    for (var j = 0; j < a.length; j++) if (this.aside[a[j]]) out.push(a[j]);
    return out;
  };
  Model.prototype.stubs = function (i) {
    var out = [], a = this.args[i];
    for (var j = 0; j < a.length; j++) if (this.aside[a[j]]) out.push(this.label(a[j]));
    return out;
  };
  Model.prototype.haystack = function (i) {
    if (!this.hay) {
      var d = this.d, S = this.S, hay = new Array(this.n);
      for (var k = 0; k < this.n; k++) {
        hay[k] = ("%" + k + " " + S[d.label[k]] + " " + S[d.type[k]] + " " + S[d.source[k]] + " " +
                  S[d.code[k]] + " " + this.kindNames[d.kind[k]]).toLowerCase();
      }
      this.hay = hay;
    }
    return this.hay[i];
  };
  Model.prototype.nodeSize = function (i) {  // [w, h], fixed per node: computed once
    var memo = this.sizes || (this.sizes = new Array(this.n));
    if (memo[i]) return memo[i];
    var stubs = this.stubs(i), stubChars = stubs.length ? clip("\u2190 " + stubs.join(", "), 40).length * 0.8 : 0;
    var chars = Math.max(clip(this.label(i), 30).length, this.type(i).length, stubChars);
    var h = NODE_H + (stubs.length ? STUB_H : 0);
    var size = memo[i] = [Math.max(70, Math.min(230, chars * CHAR_W + 16)), h];
    size.key = size[0] + "x" + size[1];
    return size;
  };
  Model.prototype.scopeTitle = function (s) {
    return this.names[s];
  };

  var dagreLib = window.CapvizDagre;
  /* One scope's items laid out by dagre: a pure function of the items' sizes and the scope's
   * local edges (pairs of item positions), so the layout Web Worker runs this same function,
   * made from its source text (see layoutWorker). x, y: the items' top-left corners; pts: per
   * edge "a>b", dagre's bend points between its ends (one per rank it crosses). */
  function dagreLayout(lib, k, w, h, e) {
    var g = new lib.graphlib.Graph();
    g.setGraph({rankdir: "TB", nodesep: 24, edgesep: 12, ranksep: 40, marginx: 0, marginy: 0});
    g.setDefaultEdgeLabel(function () { return {}; });
    var t, j;
    for (t = 0; t < k; t++) g.setNode(String(t), {width: w[t], height: h[t]});
    for (j = 0; j < e.length; j += 2) if (e[j] !== e[j + 1]) g.setEdge(String(e[j]), String(e[j + 1]));
    lib.layout(g);
    var x = new Float64Array(k), y = new Float64Array(k), minX = Infinity, minY = Infinity, maxX = 0, maxY = 0;
    for (t = 0; t < k; t++) {
      var nd = g.node(String(t));
      x[t] = nd.x - w[t] / 2; y[t] = nd.y - h[t] / 2;
      minX = Math.min(minX, x[t]); minY = Math.min(minY, y[t]);
    }
    if (!k) { minX = minY = 0; }
    for (t = 0; t < k; t++) {
      x[t] -= minX; y[t] -= minY;
      maxX = Math.max(maxX, x[t] + w[t]); maxY = Math.max(maxY, y[t] + h[t]);
    }
    var pts = new Map();
    g.edges().forEach(function (ed) {
      var p = g.edge(ed).points || [], mid = [];
      for (var q = 1; q < p.length - 1; q++) mid.push([p[q].x - minX, p[q].y - minY]);
      pts.set(ed.v + ">" + ed.w, mid);
    });
    return {w: Math.max(maxX, 60), h: Math.max(maxY, 20), x: x, y: y, pts: pts};
  }
  /* The layout Web Worker, one per page, made from an inline script (a Blob of dagre's factory
   * and dagreLayout's own source: nothing is fetched). It lays out a batch of scopes and posts
   * the results back; where a page may not start workers (a strict Content-Security-Policy),
   * or the worker fails, the same layouts run on the main thread. */
  function workerMain() {
    var lib = null;
    self.onmessage = function (ev) {
      lib = lib || dagreFactory();
      var jobs = ev.data.jobs, out = [];
      for (var j = 0; j < jobs.length; j++) out.push(dagreLayout(lib, jobs[j].k, jobs[j].w, jobs[j].h, jobs[j].e));
      self.postMessage({id: ev.data.id, out: out});
    };
  }
  var sharedWorker = null;
  function layoutWorker() {
    if (sharedWorker !== null) return sharedWorker && !sharedWorker.broken ? sharedWorker : null;
    sharedWorker = false;
    try {
      var src = "\"use strict\";\nvar dagreFactory = " + window.CapvizDagreFactory.toString() +
        ";\nvar dagreLayout = " + dagreLayout.toString() + ";\n(" + workerMain.toString() + ")();\n";
      var url = URL.createObjectURL(new Blob([src], {type: "text/javascript"}));
      var worker = new Worker(url), me = {worker: worker, next: 1, waiting: new Map(), broken: false};
      var fail = function () {  // every batch in flight is laid out on the main thread instead
        me.broken = true;
        var all = me.waiting;
        me.waiting = new Map();
        all.forEach(function (done) { done(null); });
      };
      worker.onmessage = function (ev) {
        var done = me.waiting.get(ev.data.id);
        me.waiting.delete(ev.data.id);
        if (done) done(ev.data.out);
      };
      worker.onerror = fail;
      me.run = function (jobs, done) {
        var id = me.next++;
        me.waiting.set(id, done);
        try { worker.postMessage({id: id, jobs: jobs}); } catch (err) { fail(); }
      };
      sharedWorker = me;
    } catch (err) { sharedWorker = false; }
    return sharedWorker || null;
  }

  /* ---- layout of one scope: dagre (a layered layout), cached by structure ----
   * Each open scope's items (nodes, closed boxes, open child scopes at their laid-out size) are
   * laid out on their own by dagre; the result keeps, per local edge, dagre's bend points (one
   * per rank the edge crosses, each clear of the nodes of its rank) and the rank bands, so that
   * edges are drawn in the free rows between bands and never through a box (see route()).
   * The cache key of a scope is its structure: its items' sizes (an open child by its own key)
   * and its local edges, interned to a short id, so identical blocks are laid out once. */
  function Layout(model, stable) {
    this.m = model; this.stable = stable; this.cache = new Map();
    this.ids = new Map(); this.memo = new Map(); this.edgeKeys = [];
    this.stats = {worker: 0, main: 0};  // scopes laid out in the worker, on the main thread
  }
  /* the signatures computed for one set of open scopes are kept until it changes */
  Layout.prototype.begin = function (open) {
    var was = this.memoOpen;
    if (was && was.length === open.length) {
      var same = true;
      for (var q = 0; q < open.length && same; q++) same = was[q] === open[q];
      if (same) return;
    }
    this.memo = new Map(); this.memoOpen = open.slice();
  };
  Layout.prototype.signature = function (s, open) {
    var hit = this.memo.get(s);
    if (hit !== undefined) return hit;
    var m = this.m, its = m.items[s], parts = [];
    for (var t = 0; t < its.length; t++) {
      var it = its[t];
      if (it >= 0) parts.push(m.nodeSize(it).key);
      else if (open[~it]) parts.push("(" + this.signature(~it, open) + ":" + this.titleWidth(~it) + ")");
      else parts.push("[" + this.collapsedSize(~it)[0] + "]");
    }
    var edges = this.edgeKeys[s];
    if (edges === undefined) edges = this.edgeKeys[s] = this.m.scopeEdges[s].join(",");
    var text = parts.join(",") + "|" + edges, id = this.ids.get(text);
    if (id === undefined) { id = "#" + this.ids.size; this.ids.set(text, id); }
    this.memo.set(s, id);
    return id;
  };
  Layout.prototype.collapsedSize = function (s) {
    var m = this.m, name = m.scopeTitle(s).replace(/\[\d+\]$/, "[00]");
    var text = Math.max(name.length + 2, (m.count[s] + " ops").length);
    return [Math.max(110, Math.min(300, text * CHAR_W + 24)), SCOPE_H];
  };
  /* an open scope's box around its content: header, entry row, content, exit row */
  Layout.prototype.titleWidth = function (s) {
    return (clip(this.m.scopeTitle(s), 60).length + 2) * CHAR_W;
  };
  Layout.prototype.openSize = function (s, inner) {
    return [Math.max(inner.w, this.titleWidth(s) + 40) + 2 * PAD, HEAD + ROW + inner.h + ROWB];
  };
  /* what laying out scope s needs: its items' sizes (open children laid out first) and edges */
  Layout.prototype.job = function (s, open) {
    var m = this.m, its = m.items[s], k = its.length;
    var w = new Float64Array(k), h = new Float64Array(k), inner = new Array(k);
    for (var t = 0; t < k; t++) {
      var it = its[t], size;
      if (it >= 0) size = m.nodeSize(it);
      else if (open[~it]) { inner[t] = this.scope(~it, open); size = this.openSize(~it, inner[t]); }
      else size = this.collapsedSize(~it);
      w[t] = size[0]; h[t] = size[1];
    }
    return {s: s, k: k, w: w, h: h, inner: inner, e: m.scopeEdges[s]};
  };
  Layout.prototype.compute = function (job) {
    return this.stable ? this.rows(job.s, job.k, job.w, job.h) : dagreLayout(dagreLib, job.k, job.w, job.h, job.e);
  };
  Layout.prototype.store = function (key, job, out) {
    out.iw = job.w; out.ih = job.h; out.inner = job.inner;
    bands(out, job.k);
    this.cache.set(key, out);
    return out;
  };
  /* the scopes under s (open ones) not laid out yet whose open children are: the next batch */
  Layout.prototype.pending = function (s, open, jobs) {
    var key = this.signature(s, open);
    if (this.cache.has(key)) return true;
    var its = this.m.items[s], ready = true;
    for (var t = 0; t < its.length; t++) {
      if (its[t] < 0 && open[~its[t]] && !this.pending(~its[t], open, jobs)) ready = false;
    }
    if (ready && !jobs.has(key)) jobs.set(key, this.job(s, open));
    return false;
  };
  /* scope s laid out now, on this thread, unless cached */
  Layout.prototype.scope = function (s, open) {
    var key = this.signature(s, open);
    var hit = this.cache.get(key);
    if (hit) return hit;
    var job = this.job(s, open);
    this.stats.main++;
    return this.store(key, job, this.compute(job));
  };
  /* live: rows in program order, left- and top-aligned, so a node once drawn keeps its place */
  Layout.prototype.rows = function (s, k, w, h) {
    var e = this.m.scopeEdges[s], preds = new Array(k), rank = new Int32Array(k), t, j, r;
    for (t = 0; t < k; t++) preds[t] = [];
    for (j = 0; j < e.length; j += 2) if (e[j] < e[j + 1]) preds[e[j + 1]].push(e[j]);
    var rows = [];
    for (t = 0; t < k; t++) {
      r = 0;
      for (j = 0; j < preds[t].length; j++) r = Math.max(r, rank[preds[t][j]] + 1);
      rank[t] = r;
      (rows[r] = rows[r] || []).push(t);
    }
    var x = new Float64Array(k), y = new Float64Array(k), width = 0, yy = 0;
    for (r = 0; r < rows.length; r++) {
      var xx = 0, rh = 0;
      for (j = 0; j < rows[r].length; j++) {
        t = rows[r][j]; x[t] = xx; y[t] = yy; xx += w[t] + GAP_X; rh = Math.max(rh, h[t]);
      }
      width = Math.max(width, xx - GAP_X);
      yy += rh + GAP_Y;
    }
    return {w: Math.max(width, 60), h: Math.max(yy - GAP_Y, 20), x: x, y: y, pts: new Map()};
  };
  /* the rank bands: the items' vertical extents merged; the rows between them hold no box */
  function bands(lay, k) {
    var iv = [], t;
    for (t = 0; t < k; t++) iv.push([lay.y[t], lay.y[t] + lay.ih[t], t]);
    iv.sort(function (a, b) { return a[0] - b[0]; });
    var out = [], band = new Int32Array(k);
    for (var q = 0; q < iv.length; q++) {
      var last = out[out.length - 1];
      if (last && iv[q][0] < last[1]) last[1] = Math.max(last[1], iv[q][1]);
      else out.push([iv[q][0], iv[q][1]]);
      band[iv[q][2]] = out.length - 1;
    }
    lay.bands = out; lay.band = band;
  }
  /* a y in a free row between y1 and y2 (local coordinates of the layout), nearest y1 */
  function freeRow(lay, y1, y2) {
    var lo = Math.min(y1, y2), hi = Math.max(y1, y2), b = lay.bands, down = y2 >= y1, best = null;
    for (var q = 0; q <= b.length; q++) {
      var glo = q ? b[q - 1][1] : -Infinity, ghi = q < b.length ? b[q][0] : Infinity;
      var a = Math.max(glo, lo), c = Math.min(ghi, hi);
      if (a > c) continue;
      var mid = (a + c) / 2;
      if (best === null || (down ? mid < best : mid > best)) best = mid;
    }
    return best === null ? (y1 + y2) / 2 : best;
  }

  /* ---- the view ---- */
  function View(root, data, model) {
    this.root = root;
    this.d = data;
    this.m = model;
    this.key = root.getAttribute("data-key") || "";
    this.live = !!data.live;
    this.layout = new Layout(this.m, this.live);
    this.canvasAt = data.canvas_at === undefined ? 800 : data.canvas_at;
    this.workerAt = data.worker_at === undefined ? 2000 : data.worker_at;
    this.pendingLayouts = 0; this.idleWaiters = []; this.styles = new Map();
    this.open = new Uint8Array(this.m.ns);
    this.open[0] = 1;
    this.k = 1; this.tx = 20; this.ty = 20;
    this.selected = -1; this.focused = -1; this.focusedScope = -1; this.matches = []; this.matchAt = -1;
    this.build();
    var saved = this.live ? liveState[this.key] : null;
    this.initialOpen(saved);
    this.draw();
    if (saved && !saved.follow) { this.k = saved.k; this.tx = saved.tx; this.ty = saved.ty; this.apply(); }
    else if (this.live) this.follow();
    else this.fit();
    if (this.live) liveState[this.key] = this.saveState(saved ? saved.follow : true);
    this.listProblems();
    this.legend();
  }
  View.prototype.build = function () {
    var self = this, root = this.root, m = this.m, d = this.d;
    var bar = el("div", {"class": "cv-bar"}, null, root);
    this.search = el("input", {type: "search", placeholder: "search op, name, shape, file:line, code", "class": "cv-search"}, null, bar);
    var fit = el("button", {"class": "cv-fit", title: "fit the drawing"}, "fit", bar);
    var plus = el("button", {"class": "cv-zoom-in"}, "+", bar);
    var minus = el("button", {"class": "cv-zoom-out"}, "\u2212", bar);
    var expand = el("button", {"class": "cv-expand-all", title: "open every scope"}, "expand all", bar);
    var collapse = el("button", {"class": "cv-collapse-all", title: "close every scope"}, "collapse all", bar);
    var depth = el("select", {"class": "cv-depth", title: "open every scope down to this depth"}, null, bar);
    var deepest = 0;
    for (var s0 = 1; s0 < m.ns; s0++) deepest = Math.max(deepest, m.depth[s0]);
    el("option", {value: ""}, "depth", depth);
    for (var dv = 0; dv <= deepest; dv++) el("option", {value: dv}, "depth " + dv, depth);
    this.depthSelect = depth;
    var side = el("button", {"class": "cv-side-toggle", title: "show or hide the side panel"}, "panel", bar);
    this.status = el("span", {"class": "cv-status"}, null, bar);
    var ops = 0;
    for (var i = 0; i < m.n; i++) if (d.kind[i] === 2) ops++;
    var text = (d.title ? d.title + ": " : "") + ops + " ops, " + d.violations.length + " violations";
    if (m.nan !== undefined) text += ", first NaN/Inf at %" + m.nan;
    this.status.textContent = text;
    if (d.violations.length || m.nan !== undefined) this.status.classList.add("cv-bad");
    var main = el("div", {"class": "cv-main"}, null, root);
    this.canvas = el("div", {"class": "cv-canvas"}, null, main);
    this.results = el("div", {"class": "cv-results"}, null, this.canvas);
    this.results.style.display = "none";
    this.surface = el("canvas", {"class": "cv-draw"}, null, this.canvas);  // past canvas_at nodes
    this.probeSvg = sv("svg", {"class": "cv-probe", "aria-hidden": "true"}, root);
    this.svg = sv("svg", {}, this.canvas);
    var defs = sv("defs", {}, this.svg);
    var marker = sv("marker", {id: "cv-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse"}, defs);
    sv("path", {d: "M0,0 L10,5 L0,10 z", fill: "#9ca3af"}, marker);
    this.vp = sv("g", {"class": "cv-viewport"}, this.svg);
    this.mini = el("canvas", {"class": "cv-minimap", width: MINI_W, height: MINI_H}, null, this.canvas);
    var miniDrag = false;
    function miniMove(ev) {  // centre the view on the point of the overview under the pointer
      var r = self.mini.getBoundingClientRect(), f = self.miniScale, v = self.viewSize();
      if (!f) return;
      var gx = (ev.clientX - r.left - self.miniOff[0]) / f, gy = (ev.clientY - r.top - self.miniOff[1]) / f;
      self.tx = v[0] / 2 - gx * self.k; self.ty = v[1] / 2 - gy * self.k;
      self.apply(); self.userMoved();
    }
    this.mini.addEventListener("pointerdown", function (ev) {
      ev.stopPropagation(); miniDrag = true;
      if (self.mini.setPointerCapture) self.mini.setPointerCapture(ev.pointerId);
      miniMove(ev);
    });
    this.mini.addEventListener("pointermove", function (ev) { if (miniDrag) miniMove(ev); });
    this.mini.addEventListener("pointerup", function () { miniDrag = false; });
    this.tip = el("div", {"class": "cv-tip"}, null, root);
    this.side = el("div", {"class": "cv-side"}, null, main);
    el("h4", {}, "Problems", this.side);
    this.problems = el("ul", {"class": "cv-problems"}, null, this.side);
    el("h4", {}, "Selected", this.side);
    this.panel = el("div", {"class": "cv-panel"}, "click a node", this.side);

    fit.addEventListener("click", function () { self.fit(); });
    plus.addEventListener("click", function () { self.zoomBy(1.25); });
    minus.addEventListener("click", function () { self.zoomBy(0.8); });
    expand.addEventListener("click", function () { self.openDepth(Infinity); });
    collapse.addEventListener("click", function () { self.openDepth(0); });
    depth.addEventListener("change", function () { if (depth.value !== "") self.openDepth(+depth.value); });
    side.addEventListener("click", function () {
      root.classList.toggle("cv-noside");
      self.apply();
    });
    this.search.addEventListener("input", function () { self.runSearch(); });
    this.search.addEventListener("keydown", function (ev) {
      if (ev.key === "Enter") { ev.preventDefault(); self.nextMatch(); }
      if (ev.key === "Escape") { self.closeSearch(true); }
    });
    this.results.addEventListener("click", function (ev) {
      var t = ev.target.closest("[data-at]");
      if (t) self.choose(+t.getAttribute("data-at"));
    });
    root.addEventListener("keydown", function (ev) { self.onKey(ev); });
    this.problems.addEventListener("click", function (ev) {
      var t = ev.target.closest("[data-i]");
      if (t) self.focus(+t.getAttribute("data-i"));
    });
    this.panel.addEventListener("click", function (ev) {
      var t = ev.target.closest("[data-i]");
      if (t) self.focus(+t.getAttribute("data-i"));
    });
    this.vp.addEventListener("click", function (ev) {
      var konst = ev.target.closest("[data-const]");
      if (konst) { self.select(+konst.getAttribute("data-const")); return; }
      var node = ev.target.closest("g.cv-node");
      if (node) { self.select(+node.getAttribute("data-i")); return; }
      var scope = ev.target.closest("g.cv-scope");
      if (scope) {
        var s = +scope.getAttribute("data-s");
        if (!self.open[s] || ev.target.classList.contains("cv-head")) self.toggle(s);
      }
    });
    this.vp.addEventListener("mouseover", function (ev) {
      var node = ev.target.closest("g.cv-node");
      if (node) self.showTip(+node.getAttribute("data-i"), ev);
      else self.tip.style.display = "none";
    });
    this.vp.addEventListener("mousemove", function (ev) { if (self.tip.style.display !== "none") self.moveTip(ev); });
    this.vp.addEventListener("mouseleave", function () { self.tip.style.display = "none"; });
    var drag = null;
    this.svg.addEventListener("pointerdown", function (ev) {
      self.dragged = false;
      if (ev.target.closest("g.cv-node, g.cv-scope")) return;
      drag = {x: ev.clientX, y: ev.clientY, tx: self.tx, ty: self.ty};
      if (self.svg.setPointerCapture) self.svg.setPointerCapture(ev.pointerId);  // no window listeners: a replaced view leaves nothing behind
      self.canvas.style.cursor = "grabbing";
    });
    this.svg.addEventListener("pointermove", function (ev) {
      if (!drag) return;
      if (Math.abs(ev.clientX - drag.x) + Math.abs(ev.clientY - drag.y) > 3) self.dragged = true;
      self.tx = drag.tx + ev.clientX - drag.x; self.ty = drag.ty + ev.clientY - drag.y; self.apply();
      self.userMoved();
    });
    var release = function () { drag = null; self.canvas.style.cursor = ""; };
    // the canvas drawing: clicks and hovers find their node, constant or scope by position
    this.svg.addEventListener("click", function (ev) {
      if (!self.canvasMode || self.dragged) return;
      var hit = self.hitAt(ev.clientX, ev.clientY);
      if (self.svg.focus) self.svg.focus({preventScroll: true});
      self.focusedScope = hit.node < 0 && hit.scope > 0 ? hit.scope : -1;  // what Enter opens or closes
      if (hit.konst >= 0) self.select(hit.konst);
      else if (hit.node >= 0) self.select(hit.node);
      else if (hit.scope > 0 && (!self.open[hit.scope] || hit.head)) self.toggle(hit.scope);
    });
    this.svg.addEventListener("mousemove", function (ev) {
      if (!self.canvasMode || drag) return;
      var hit = self.hitAt(ev.clientX, ev.clientY);
      if (hit.node >= 0) { if (self.tip.getAttribute("data-i") !== String(hit.node) || self.tip.style.display === "none") self.showTip(hit.node, ev); else self.moveTip(ev); }
      else self.tip.style.display = "none";
      self.canvas.style.cursor = hit.node >= 0 || hit.scope > 0 ? "pointer" : "";
    });
    this.svg.addEventListener("pointerup", release);
    this.svg.addEventListener("pointercancel", release);
    this.svg.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var r = self.svg.getBoundingClientRect();
      self.zoomBy(Math.exp(-ev.deltaY * 0.0015), ev.clientX - r.left, ev.clientY - r.top);
      self.userMoved();
    }, {passive: false});
  };
  View.prototype.userMoved = function () {
    if (this.live) liveState[this.key] = this.saveState(false);
  };
  View.prototype.saveState = function (follow) {
    var paths = [];
    for (var s = 1; s < this.m.ns; s++) if (this.open[s]) paths.push(this.m.path[s]);
    return {open: paths, k: this.k, tx: this.tx, ty: this.ty, follow: follow};
  };
  View.prototype.initialOpen = function (saved) {
    var m = this.m, open = this.open, s, t;
    if (saved) {  // while recording, a first call shows as "f" until a second makes it "f[0]"
      var plain = function (p) { return p.replace(/\[0\](?=\/|$)/g, ""); };
      var want = new Set(saved.open.map(plain));
      for (s = 1; s < m.ns; s++) if (want.has(plain(m.path[s]))) open[s] = 1;
    }
    // the boxes open at first: whole levels that fit the budget, decided with the static
    // SVG's rules in Python (d.scopes.open)
    var initial = this.d.scopes.open;
    for (t = 0; t < initial.length; t++) open[initial[t]] = 1;
    if (this.live) {  // the scopes being recorded into stay open: the view follows the capture
      if (m.n) for (var a = m.nodeScope[m.n - 1]; a > 0; a = m.parent[a]) open[a] = 1;
    }
  };
  View.prototype.toggle = function (s) {
    var before = this.box(s);
    this.open[s] = this.open[s] ? 0 : 1;
    if (!this.open[s]) {  // closing a scope closes what is inside it
      for (var c = 1; c < this.m.ns; c++) if (this.open[c] && this.inside(c, s)) this.open[c] = 0;
    }
    this.update(function () {
      var after = this.box(s);
      if (before && after) { this.tx += (before[0] - after[0]) * this.k; this.ty += (before[1] - after[1]) * this.k; this.apply(); }
      if (this.live) liveState[this.key] = this.saveState(false);
    });
  };
  /* every box down to depth ``depth`` open, every deeper box closed (0: only the top level) */
  View.prototype.openDepth = function (depth) {
    var m = this.m;
    for (var s = 1; s < m.ns; s++) this.open[s] = m.depth[s] <= depth ? 1 : 0;
    this.update(function () {
      this.fit();
      if (this.live) liveState[this.key] = this.saveState(false);
    });
  };
  /* Draw once what the open scopes need is laid out, then run ``after`` (with this view as
   * this). A large graph (more than worker_at nodes) is laid out in the Web Worker, batch by
   * batch (children before their parents), while the page stays responsive: the root carries
   * data-busy meanwhile and idle() resolves after. Otherwise, or without a worker, at once. */
  View.prototype.update = function (after) {
    var self = this, L = this.layout, worker = this.live || this.m.n <= this.workerAt ? null : layoutWorker();
    if (worker) {
      var jobs = new Map();
      L.begin(this.open);
      L.pending(0, this.open, jobs);
      if (jobs.size) {
        var keys = [], list = [];
        jobs.forEach(function (job, key) { keys.push(key); list.push(job); });
        this.busy(1);
        worker.run(list.map(function (j) { return {k: j.k, w: j.w, h: j.h, e: j.e}; }), function (out) {
          for (var q = 0; q < list.length; q++) {
            if (!L.cache.has(keys[q])) L.store(keys[q], list[q], out ? out[q] : L.compute(list[q]));
          }
          L.stats[out ? "worker" : "main"] += list.length;
          self.update(after);
          self.busy(-1);
        });
        return;
      }
    }
    this.draw();
    if (after) after.call(this);
  };
  View.prototype.busy = function (delta) {
    this.pendingLayouts += delta;
    if (this.pendingLayouts) { this.root.setAttribute("data-busy", "1"); return; }
    this.root.removeAttribute("data-busy");
    var waiting = this.idleWaiters;
    this.idleWaiters = [];
    for (var q = 0; q < waiting.length; q++) waiting[q]();
  };
  /* a promise resolved when no layout is in flight and the drawing is up to date */
  View.prototype.idle = function () {
    var self = this;
    return new Promise(function (resolve) {
      if (!self.pendingLayouts) resolve(); else self.idleWaiters.push(resolve);
    });
  };
  View.prototype.inside = function (c, s) {
    for (var a = c; a > 0; a = this.m.parent[a]) if (a === s) return true;
    return false;
  };
  View.prototype.expandTo = function (i) {
    var changed = false;
    for (var a = this.m.nodeScope[i]; a > 0; a = this.m.parent[a]) if (!this.open[a]) { this.open[a] = 1; changed = true; }
    return changed;
  };
  View.prototype.box = function (s) { return this.scopeBox[s]; };

  /* place every visible item, then draw scopes, edges and nodes */
  View.prototype.place = function () {
    var m = this.m, open = this.open, nodeBox = {}, scopeBox = {}, content = {};
    var L = this.layout;
    function walk(s, lay, ox, oy) {
      content[s] = [ox, oy, lay];
      var its = m.items[s];
      for (var t = 0; t < its.length; t++) {
        var x = ox + lay.x[t], y = oy + lay.y[t], w = lay.iw[t], h = lay.ih[t], it = its[t];
        if (it >= 0) nodeBox[it] = [x, y, w, h];
        else {
          scopeBox[~it] = [x, y, w, h];
          if (open[~it]) {
            var inner = lay.inner[t];
            walk(~it, inner, x + PAD + (w - 2 * PAD - inner.w) / 2, y + HEAD + ROW);
          }
        }
      }
    }
    L.begin(open);
    var top = L.scope(0, open);
    walk(0, top, 0, 0);
    this.size = [top.w, top.h];
    this.nodeBox = nodeBox; this.scopeBox = scopeBox; this.content = content;
  };
  /* An edge's path between two drawn items (nodes or closed boxes), as orthogonal segments that
   * run only in the free rows between rank bands, down the columns dagre found clear in each
   * band, and along the inner margins of open scopes: it never crosses a box that is not its
   * endpoint, nor a scope's title (an edge enters an open scope right of its title). The last
   * three points are the approach [x, y], [entry, y], [entry, top]; the entry is set by the
   * caller so that the edges into one box arrive side by side (fan-in stays visible). */
  View.prototype.route = function (ru, rv) {
    var m = this.m, self = this, L = this.layout;
    function cont(r) { return r >= 0 ? m.nodeScope[r] : m.parent[~r]; }
    function loc(r) { return r >= 0 ? m.nodeLocal[r] : m.local[~r]; }
    var a = cont(ru), b = cont(rv), ia = ru, ib = rv, ups = [], downs = [];
    while (m.depth[a] > m.depth[b]) { ups.push([a, ia]); ia = ~a; a = m.parent[a]; }
    while (m.depth[b] > m.depth[a]) { downs.push([b, ib]); ib = ~b; b = m.parent[b]; }
    while (a !== b) { ups.push([a, ia]); ia = ~a; a = m.parent[a]; downs.push([b, ib]); ib = ~b; b = m.parent[b]; }
    function box(r) { return r >= 0 ? self.nodeBox[r] : self.scopeBox[~r]; }
    var A = box(ru), pts = [[A[0] + A[2] / 2, A[1] + A[3]]], q, c, lay, B, t, y0;
    function cur() { return pts[pts.length - 1]; }
    for (q = 0; q < ups.length; q++) {  // out of each open scope: to its exit row, then its centre
      var S = ups[q][0], SB = this.scopeBox[S]; c = this.content[S]; lay = c[2];
      t = loc(ups[q][1]);
      var yb = c[1] + lay.h + ROWB / 2;
      if (lay.band[t] < lay.bands.length - 1) {
        var g0 = c[1] + freeRow(lay, lay.bands[lay.band[t]][1], lay.bands[lay.band[t] + 1][0]);
        var xm = SB[0] + SB[2] - PAD / 2;
        pts.push([cur()[0], g0], [xm, g0]);
      }
      pts.push([cur()[0], yb], [SB[0] + SB[2] / 2, yb], [SB[0] + SB[2] / 2, SB[1] + SB[3]]);
    }
    c = this.content[a]; lay = c[2];
    var la = loc(ia), lb = loc(ib), dummies = lay.pts.get(la + ">" + lb) || [];
    var x = cur()[0], y = cur()[1] - c[1];
    B = box(ib);
    for (q = 0; q < dummies.length; q++) {
      var gy = freeRow(lay, y, dummies[q][1]);
      pts.push([x, c[1] + gy], [c[0] + dummies[q][0], c[1] + gy]);
      x = c[0] + dummies[q][0]; y = dummies[q][1];
    }
    var gl = c[1] + freeRow(lay, y, B[1] - c[1]);
    pts.push([x, gl]);
    for (q = downs.length - 1; q >= 0; q--) {  // into each open scope: right of its title
      var T = ~ib, TB = this.scopeBox[T], xe = TB[0] + PAD + L.titleWidth(T) + 8;
      c = this.content[T]; lay = c[2]; t = loc(downs[q][1]);
      var yr = TB[1] + HEAD + ROW / 2, inner = box(downs[q][1]);
      if (lay.band[t] === 0) xe = Math.max(xe, Math.min(inner[0] + inner[2] / 2, TB[0] + TB[2] - PAD));
      pts.push([xe, cur()[1]], [xe, yr]);
      ib = downs[q][1]; B = box(ib);
      if (lay.band[t] > 0) {
        var xl = TB[0] + PAD / 2;
        y0 = c[1] + freeRow(lay, lay.bands[lay.band[t] - 1][1], lay.bands[lay.band[t]][0]);
        pts.push([xl, yr], [xl, y0]);
      }
    }
    B = box(rv);
    var last = cur();
    pts.push([B[0] + B[2] / 2, last[1]], [B[0] + B[2] / 2, B[1]]);
    return pts;
  };
  View.prototype.repScopes = function () {  // per scope: its closed outermost ancestor, or -1
    var m = this.m, r = new Int32Array(m.ns).fill(-1);
    for (var o = 1; o < m.order.length; o++) {
      var s = m.order[o], up = r[m.parent[s]];
      r[s] = up >= 0 ? up : (this.open[s] ? -1 : s);
    }
    this.repOfScope = r;
  };
  View.prototype.rep = function (i) {  // the drawn item standing for node i: itself or a scope
    var r = this.repOfScope[this.m.nodeScope[i]];
    return r < 0 ? i : ~r;
  };
  /* the edges between drawn items: one per pair of items, routed (see route()), with the
   * arrivals into one item side by side */
  View.prototype.routeEdges = function () {
    var m = this.m, self = this, seen = new Map(), drawn = [], into = new Map(), span = m.n + m.ns + 1;
    for (var e = 0; e < m.edges.length; e++) {
      var ed = m.edges[e], ru = this.rep(ed[0]), rv = this.rep(ed[1]);
      if (ru === rv) continue;
      var key = (ru + m.ns) * span + rv + m.ns;  // the pair as one number: a closed box is ~s
      var onPath = ed[2] === 0 && m.onPath[ed[0]] && m.onPath[ed[1]];
      var had = seen.get(key);
      if (had !== undefined) { if (onPath) drawn[had].path = true; continue; }
      seen.set(key, drawn.length);
      var pts = this.route(ru, rv);
      drawn.push({u: ru, v: rv, pts: pts, path: onPath, link: ed[2] === 1});
      if (!into.has(rv)) into.set(rv, []);
      into.get(rv).push(drawn.length - 1);
    }
    into.forEach(function (list, rv) {  // edges into one box arrive side by side, in approach order
      var B = rv >= 0 ? self.nodeBox[rv] : self.scopeBox[~rv];
      list.sort(function (p, q) { return drawn[p].pts[drawn[p].pts.length - 3][0] - drawn[q].pts[drawn[q].pts.length - 3][0]; });
      for (var j = 0; j < list.length; j++) {
        var pt = drawn[list[j]].pts, x = B[0] + B[2] * (j + 1) / (list.length + 1);
        pt[pt.length - 2][0] = x; pt[pt.length - 1][0] = x;
      }
    });
    return drawn;
  };
  function itemId(r) { return r >= 0 ? String(r) : "s" + (~r); }
  View.prototype.nodeClass = function (i) {
    var m = this.m, kind = this.d.kind[i], level = m.level[i];
    return "cv-node cv-k" + kind + (level === "warning" ? " cv-warning" : "") +
      (m.onPath[i] ? " cv-nanpath" : "") + (i === m.nan ? " cv-nonfinite cv-bad" : "") +
      (m.source[i] ? " cv-source" : "") + (this.metricFill(i) ? " cv-metric" : "") +
      " cv-kind-" + m.kindNames[kind];
  };
  View.prototype.scopeClass = function (s) {
    var m = this.m;
    return "cv-scope" + (this.open[s] ? " cv-open" : "") + (m.bad[s] ? " cv-bad" : "") +
      (m.pathScope[s] && !this.open[s] ? " cv-nanpath" : "") + (m.virt[s] ? (m.fold[s] ? " cv-fold" : " cv-group") : "");
  };
  View.prototype.edgeClass = function (dd) {
    return "cv-edge" + (dd.link ? " cv-link" : "") + (dd.path ? " cv-nanpath" : "");
  };
  /* Up to canvas_at drawn nodes, the drawing is SVG elements (each node a g.cv-node with
   * data-node, each edge a path.cv-edge with data-edge); past it, one <canvas> painted on each
   * pan and zoom with only what is in sight (see paint()), and drawing() and nodeAt() say what
   * is where. Both draw the same boxes, routes and colours (the canvas reads the style sheet). */
  View.prototype.draw = function () {
    var vp = this.vp;
    this.draws = (this.draws || 0) + 1;  // drawings made so far (tests wait on it)
    this.place();
    this.repScopes();
    while (vp.firstChild) vp.removeChild(vp.firstChild);
    this.drawnEdges = this.routeEdges();
    var count = 0;
    for (var key in this.nodeBox) count++;
    this.canvasMode = count > this.canvasAt;
    this.root.setAttribute("data-drawing", this.canvasMode ? "canvas" : "svg");
    this.surface.style.display = this.canvasMode ? "block" : "none";
    if (this.canvasMode) this.svg.setAttribute("tabindex", "0"); else this.svg.removeAttribute("tabindex");
    if (this.canvasMode) this.buildScene();
    else { this.scene = null; this.drawSvg(); }
    this.paintMini();
    this.apply();
  };
  View.prototype.drawSvg = function () {
    var m = this.m, d = this.d, vp = this.vp;
    var gScopes = sv("g", {"class": "cv-scopes"}, vp), gEdges = sv("g", {"class": "cv-edges"}, vp);
    var gNodes = sv("g", {"class": "cv-nodes"}, vp);
    var s, b, g;
    var scopes = Object.keys(this.scopeBox).map(Number).sort(function (a, c) { return m.depth[a] - m.depth[c]; });
    for (var q = 0; q < scopes.length; q++) {
      s = scopes[q]; b = this.scopeBox[s];
      g = sv("g", {"class": this.scopeClass(s) + (s === this.focusedScope ? " cv-focus" : ""), "data-s": s, "data-path": m.path[s], tabindex: 0}, gScopes);
      sv("rect", {x: b[0], y: b[1], width: b[2], height: b[3], rx: 5}, g);
      if (this.open[s]) {
        sv("rect", {"class": "cv-head", x: b[0], y: b[1], width: b[2], height: HEAD - 4, rx: 5}, g);
        svText(g, b[0] + 6, b[1] + 13, "\u25be " + clip(m.scopeTitle(s), 60), "cv-name");
      } else {
        svText(g, b[0] + 8, b[1] + 17, "\u25b8 " + clip(m.scopeTitle(s), 36), "cv-name");
        svText(g, b[0] + 8, b[1] + 33, m.count[s] + " ops", "cv-type");
      }
    }
    var drawn = this.drawnEdges;
    for (var de = 0; de < drawn.length; de++) {
      var dd = drawn[de], dpath = "M" + dd.pts[0][0] + "," + dd.pts[0][1];
      for (var pq = 1; pq < dd.pts.length; pq++) dpath += " L" + dd.pts[pq][0] + "," + dd.pts[pq][1];
      sv("path", {"class": this.edgeClass(dd), "data-edge": itemId(dd.u) + " " + itemId(dd.v), d: dpath}, gEdges);
    }
    for (var key2 in this.nodeBox) {
      var i = +key2;
      b = this.nodeBox[i];
      var kind = d.kind[i];
      g = sv("g", {"class": this.nodeClass(i) + (i === this.focused ? " cv-focus" : ""), "data-i": i, "data-node": i, tabindex: 0}, gNodes);
      var outline = shape(g, d.shapes ? d.shapes[kind] : "round", b), fill = this.metricFill(i);
      if (fill) outline.style.fill = fill;
      var stubs = m.stubs(i), y0 = b[1];
      if (stubs.length) { this.stubLine(g, i, b[0] + 6, y0 + 12); y0 += STUB_H; }
      svText(g, b[0] + 7, y0 + 16, clip(m.label(i), 30), "cv-label");
      svText(g, b[0] + 7, y0 + 32, m.type(i), "cv-type");
    }
  };

  /* ---- the canvas drawing (past canvas_at drawn nodes) ----
   * Colours, widths and dashes come from the style sheet: each distinct class list is given to
   * a hidden probe element once per drawing and its computed style read (so the theme, light or
   * dark, and the kinds' colours from rules.py apply as in the SVG). Each frame paints only the
   * boxes, edges and text in sight, one path per style; text only when it is 5 px or more. */
  var TEXT_K = 0.45;
  View.prototype.probe = function (outer, inner, tag) {
    var key = outer + "|" + inner + "|" + (tag || "rect"), hit = this.styles.get(key);
    if (hit) return hit;
    var g = sv("g", {"class": outer}, this.probeSvg), e;
    if (tag === "tspan") e = sv("tspan", {"class": inner}, sv("text", {"class": "cv-stub"}, g));  // a stub's constant
    else e = sv(tag || "rect", {"class": inner}, g);
    var cs = getComputedStyle(e), dash = cs.strokeDasharray;
    var out = {fill: cs.fill, stroke: cs.stroke, width: parseFloat(cs.strokeWidth) || 1,
      dash: dash && dash !== "none" ? dash.split(/[ ,]+/).map(parseFloat) : [],
      font: cs.fontWeight + " " + cs.fontSize + " " + cs.fontFamily};
    if (out.fill === "none") out.fill = null;
    if (out.stroke === "none") out.stroke = null;
    this.probeSvg.removeChild(g);
    this.styles.set(key, out);
    return out;
  };
  View.prototype.buildScene = function () {
    var m = this.m, d = this.d, self = this;
    this.styles = new Map();
    var groups = new Map();  // style key -> {style, shape, items}
    function group(key, style, shapeName) {
      var grp = groups.get(key);
      if (!grp) { grp = {style: style, shape: shapeName, items: [], ids: []}; groups.set(key, grp); }
      return grp;
    }
    var nodes = [];
    for (var key in this.nodeBox) {
      var i = +key, cls = this.nodeClass(i), fill = this.metricFill(i), gkey = cls + "|" + (fill || ""), grp = groups.get(gkey);
      if (!grp) {
        var st = this.probe(cls, "cv-shape");
        if (fill) st = {fill: fill, stroke: st.stroke, width: st.width, dash: st.dash};
        grp = group(gkey, st, d.shapes ? d.shapes[d.kind[i]] : "round");
        grp.cls = cls;
      }
      grp.items.push(this.nodeBox[i]);
      grp.ids.push(i);
      nodes.push(i);
    }
    var scopes = Object.keys(this.scopeBox).map(Number).sort(function (a, c) { return m.depth[a] - m.depth[c]; });
    var edgeGroups = new Map();
    for (var q = 0; q < this.drawnEdges.length; q++) {
      var dd = this.drawnEdges[q], ecls = this.edgeClass(dd), eg = edgeGroups.get(ecls);
      if (!eg) { eg = {style: this.probe("", ecls, "path"), items: []}; edgeGroups.set(ecls, eg); }
      var x0 = Infinity, y0b = Infinity, x1 = -Infinity, y1 = -Infinity;
      for (var p = 0; p < dd.pts.length; p++) {
        x0 = Math.min(x0, dd.pts[p][0]); x1 = Math.max(x1, dd.pts[p][0]);
        y0b = Math.min(y0b, dd.pts[p][1]); y1 = Math.max(y1, dd.pts[p][1]);
      }
      eg.items.push({pts: dd.pts, bb: [x0 - 6, y0b - 10, x1 - x0 + 12, y1 - y0b + 12]});
    }
    this.scene = {groups: groups, nodes: nodes, scopes: scopes, edges: edgeGroups, spans: new Map()};
    void self;
  };
  /* the constants of node i's stub line ("\u2190 a, b"), each [index, x, width, text]: each a
   * link to its own panel, as the SVG's tspans; measured when first painted or clicked */
  View.prototype.spansOf = function (i) {
    var sc = this.scene, hit = sc.spans.get(i);
    if (hit) return hit;
    var m = this.m, b = this.nodeBox[i], cls = this.nodeClass(i), ids = m.stubIds(i), spans = [];
    var left = 39, x = b[0] + 6 + this.textWidth("\u2190 ", cls, "cv-stub", "text");
    for (var j = 0; j < ids.length && left > 0; j++) {
      var text = (j ? ", " : "") + m.label(ids[j]);
      if (text.length > left) text = text.slice(0, left - 1) + "\u2026";
      left -= text.length;
      var w = this.textWidth(text, cls, "cv-const" + (m.source[ids[j]] ? " cv-source" : ""), "tspan");
      spans.push([ids[j], x, w, text]);
      x += w;
    }
    sc.spans.set(i, spans);
    return spans;
  };
  View.prototype.textWidth = function (text, outer, inner, tag) {
    var ctx = this.surface.getContext("2d");
    if (!ctx) return text.length * CHAR_W;
    var font = this.probe(outer, inner, tag).font, key = font + "|" + text;
    var widths = this.widths || (this.widths = new Map()), hit = widths.get(key);
    if (hit !== undefined) return hit;
    if (ctx.font !== font) ctx.font = font;
    hit = ctx.measureText(text).width;
    widths.set(key, hit);
    return hit;
  };
  function tracePath(ctx, name, b) {
    var x = b[0], y = b[1], w = b[2], h = b[3], c = 7, pts;
    if (name === "round" || name === "box" || !name || name === "store") {
      var r = name === "box" ? 2 : name === "store" ? 5 : 6;
      ctx.moveTo(x + r, y); ctx.arcTo(x + w, y, x + w, y + h, r); ctx.arcTo(x + w, y + h, x, y + h, r);
      ctx.arcTo(x, y + h, x, y, r); ctx.arcTo(x, y, x + w, y, r); ctx.closePath();
      return;
    }
    if (name === "hexagon") pts = [[x + c, y], [x + w - c, y], [x + w, y + h / 2], [x + w - c, y + h], [x + c, y + h], [x, y + h / 2]];
    else if (name === "diamond") pts = [[x + w / 2, y], [x + w, y + h / 2], [x + w / 2, y + h], [x, y + h / 2]];
    else pts = [[x + c, y], [x + w - c, y], [x + w, y + c], [x + w, y + h - c], [x + w - c, y + h], [x + c, y + h], [x, y + h - c], [x, y + c]];
    ctx.moveTo(pts[0][0], pts[0][1]);
    for (var q = 1; q < pts.length; q++) ctx.lineTo(pts[q][0], pts[q][1]);
    ctx.closePath();
  }
  /* a box (a scope's, often far larger than the view) drawn only where it is in sight: its
   * sides clipped to the view, their dashes kept in place as it pans */
  function boxIn(ctx, b, r, st) {
    var m = 20, x0 = b[0], y0 = b[1], x1 = b[0] + b[2], y1 = b[1] + b[3];
    if (x0 >= r[0] - m && y0 >= r[1] - m && x1 <= r[2] + m && y1 <= r[3] + m) {
      ctx.beginPath(); tracePath(ctx, "round", b);
      if (st.fill) { ctx.fillStyle = st.fill; ctx.fill(); }
      stroke(ctx, st);
      return;
    }
    var cx0 = Math.max(x0, r[0] - m), cy0 = Math.max(y0, r[1] - m), cx1 = Math.min(x1, r[2] + m), cy1 = Math.min(y1, r[3] + m);
    if (st.fill) { ctx.fillStyle = st.fill; ctx.fillRect(cx0, cy0, cx1 - cx0, cy1 - cy0); }
    if (!st.stroke) return;
    ctx.strokeStyle = st.stroke; ctx.lineWidth = st.width; ctx.setLineDash(st.dash);
    var period = 0;  // the dash pattern's length: the offset taken modulo it (a large one is slow)
    for (var d = 0; d < st.dash.length; d++) period += st.dash[d] * (st.dash.length % 2 ? 2 : 1);
    var sides = [[y0, cx0, cx1, x0, 0], [y1, cx0, cx1, x0, 0], [x0, cy0, cy1, y0, 1], [x1, cy0, cy1, y0, 1]];
    for (var q = 0; q < 4; q++) {
      var at = sides[q][0], from = sides[q][1], to = sides[q][2], vert = sides[q][4];
      if (at < (vert ? r[0] : r[1]) - m || at > (vert ? r[2] : r[3]) + m || to <= from) continue;
      ctx.lineDashOffset = period ? (from - sides[q][3]) % period : 0;
      ctx.beginPath();
      if (vert) { ctx.moveTo(at, from); ctx.lineTo(at, to); } else { ctx.moveTo(from, at); ctx.lineTo(to, at); }
      ctx.stroke();
    }
    ctx.lineDashOffset = 0;
  }
  function seen(b, r) { return b[0] < r[2] && b[0] + b[2] > r[0] && b[1] < r[3] && b[1] + b[3] > r[1]; }
  function stroke(ctx, st) {
    if (!st.stroke) return;
    ctx.strokeStyle = st.stroke; ctx.lineWidth = st.width; ctx.setLineDash(st.dash);
    ctx.stroke();
  }
  /* one frame of the canvas drawing: what is in sight at the current pan and zoom */
  View.prototype.paint = function () {
    var sc = this.scene, c = this.surface, ctx = c.getContext && c.getContext("2d");
    if (!sc || !ctx) return;
    var v = this.viewSize(), dpr = window.devicePixelRatio || 1, k = this.k, m = this.m;
    var cw = Math.round(v[0] * dpr), ch = Math.round(v[1] * dpr);
    if (c.width !== cw || c.height !== ch) { c.width = cw; c.height = ch; }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.clearRect(0, 0, cw, ch);
    ctx.setTransform(dpr * k, 0, 0, dpr * k, dpr * this.tx, dpr * this.ty);
    var r = [-this.tx / k, -this.ty / k, (v[0] - this.tx) / k, (v[1] - this.ty) / k], q, b, st, s;
    var text = k >= TEXT_K;
    for (q = 0; q < sc.scopes.length; q++) {  // scopes, outermost first
      s = sc.scopes[q]; b = this.scopeBox[s];
      if (!seen(b, r)) continue;
      var cls = this.scopeClass(s) + (s === this.focusedScope ? " cv-focus" : "");
      st = this.probe(cls, "");
      boxIn(ctx, b, r, st);
      if (this.open[s]) boxIn(ctx, [b[0], b[1], b[2], HEAD - 4], r, this.probe(cls, "cv-head"));
      if (!text) continue;
      var ts = this.probe(cls, "cv-name", "text");
      ctx.font = ts.font; ctx.fillStyle = ts.fill; ctx.setLineDash([]);
      if (this.open[s]) ctx.fillText("\u25be " + clip(m.scopeTitle(s), 60), b[0] + 6, b[1] + 13);
      else {
        ctx.fillText("\u25b8 " + clip(m.scopeTitle(s), 36), b[0] + 8, b[1] + 17);
        var ty = this.probe(cls, "cv-type", "text");
        ctx.fillStyle = ty.fill; ctx.font = ty.font;
        ctx.fillText(m.count[s] + " ops", b[0] + 8, b[1] + 33);
      }
    }
    sc.edges.forEach(function (eg) {  // edges, one path per style, each with its arrowhead
      var heads = [];
      ctx.beginPath();
      for (var j = 0; j < eg.items.length; j++) {
        var it = eg.items[j], pts = it.pts;
        if (!seen(it.bb, r)) continue;
        ctx.moveTo(pts[0][0], pts[0][1]);
        for (var p = 1; p < pts.length; p++) ctx.lineTo(pts[p][0], pts[p][1]);
        heads.push(pts[pts.length - 2], pts[pts.length - 1]);
      }
      stroke(ctx, eg.style);
      ctx.beginPath();
      for (j = 0; j < heads.length; j += 2) {
        var a = heads[j], z = heads[j + 1], dx = z[0] - a[0], dy = z[1] - a[1], len = Math.hypot(dx, dy) || 1;
        dx /= len; dy /= len;
        ctx.moveTo(z[0], z[1]);
        ctx.lineTo(z[0] - 8 * dx - 3.5 * dy, z[1] - 8 * dy + 3.5 * dx);
        ctx.lineTo(z[0] - 8 * dx + 3.5 * dy, z[1] - 8 * dy - 3.5 * dx);
        ctx.closePath();
      }
      ctx.fillStyle = eg.style.stroke || "#6b7280"; ctx.fill();
    });
    sc.groups.forEach(function (grp) {  // nodes, one path per style
      ctx.beginPath();
      var any = false;
      for (var j = 0; j < grp.items.length; j++) {
        if (!seen(grp.items[j], r)) continue;
        tracePath(ctx, grp.shape, grp.items[j]); any = true;
      }
      if (!any) return;
      if (grp.style.fill) { ctx.fillStyle = grp.style.fill; ctx.fill(); }
      stroke(ctx, grp.style);
    });
    if (this.focused >= 0 && this.nodeBox[this.focused]) {  // the focused node's outline
      var fs = this.probe("cv-node cv-focus", "cv-shape");
      ctx.beginPath(); tracePath(ctx, this.d.shapes ? this.d.shapes[this.d.kind[this.focused]] : "round", this.nodeBox[this.focused]);
      stroke(ctx, fs);
    }
    if (!text) return;
    var runs = new Map();  // text by style: the font and colour are set once per style
    function put(st, str, x, y) {
      var key = st.font + "|" + st.fill, run = runs.get(key);
      if (!run) { run = {st: st, items: []}; runs.set(key, run); }
      run.items.push(str, x, y);
    }
    var self = this;
    sc.groups.forEach(function (grp) {  // the text of the nodes in sight
      for (var j = 0; j < grp.items.length; j++) {
        b = grp.items[j];
        if (!seen(b, r)) continue;
        var i = grp.ids[j], cls = grp.cls, y0 = b[1];
        if (m.stubIds(i).length) {
          var spans = self.spansOf(i);
          put(self.probe(cls, "cv-stub", "text"), "\u2190 ", b[0] + 6, b[1] + 12);
          for (var j2 = 0; j2 < spans.length; j2++) {
            put(self.probe(cls, "cv-const" + (m.source[spans[j2][0]] ? " cv-source" : ""), "tspan"), spans[j2][3], spans[j2][1], b[1] + 12);
          }
          y0 += STUB_H;
        }
        put(self.probe(cls, "cv-label", "text"), clip(m.label(i), 30), b[0] + 7, y0 + 16);
        put(self.probe(cls, "cv-type", "text"), m.type(i), b[0] + 7, y0 + 32);
      }
    });
    runs.forEach(function (run) {
      ctx.font = run.st.font; ctx.fillStyle = run.st.fill;
      for (var j = 0; j < run.items.length; j += 3) ctx.fillText(run.items[j], run.items[j + 1], run.items[j + 2]);
    });
  };
  /* the constants (and set-aside nodes) an op reads, each a link to its own panel; a
   * non-finite source is marked */
  /* colour by a metric (d.metric: a name and a number per node): light yellow to orange, on a
   * log scale when the numbers span more than 100x; the legend says the name and the range */
  View.prototype.metricScale = function () {
    var met = this.d.metric;
    if (!met) return null;
    if (this.scale) return this.scale;
    var lo = Infinity, hi = -Infinity;
    for (var key in met.values) { lo = Math.min(lo, met.values[key]); hi = Math.max(hi, met.values[key]); }
    var log = lo > 0 && hi / lo > 100;
    var f = function (x) { return log ? Math.log(x) : x; };
    this.scale = {lo: lo, hi: hi, log: log, at: function (x) {
      return hi > lo ? (f(x) - f(lo)) / (f(hi) - f(lo)) : 1;
    }};
    return this.scale;
  };
  View.prototype.metricFill = function (i) {
    var sc = this.metricScale(), x = sc && this.d.metric.values[i];
    if (x === undefined || x === null || !sc) return null;
    return metricColour(sc.at(x));
  };
  function metricColour(t) {  // #fef9c3 (low) to #f97316 (high): dark text stays readable
    var a = [254, 249, 195], b = [249, 115, 22], c = [];
    for (var k = 0; k < 3; k++) c.push(Math.round(a[k] + (b[k] - a[k]) * Math.max(0, Math.min(1, t))));
    return "rgb(" + c.join(",") + ")";
  }
  View.prototype.legend = function () {
    var sc = this.metricScale();
    if (!sc) return;
    var box = el("div", {"class": "cv-legend"}, null, this.canvas);
    el("div", {"class": "cv-legend-name"}, this.d.metric.name + (sc.log ? " (log scale)" : ""), box);
    var bar = el("div", {"class": "cv-legend-bar"}, null, box);
    bar.style.background = "linear-gradient(to right, " + metricColour(0) + ", " + metricColour(1) + ")";
    var ends = el("div", {"class": "cv-legend-ends"}, null, box);
    el("span", {"class": "cv-legend-lo"}, fmt(sc.lo), ends);
    el("span", {"class": "cv-legend-hi"}, fmt(sc.hi), ends);
  };
  View.prototype.stubLine = function (g, i, x, y) {
    var m = this.m, ids = m.stubIds(i), t = svText(g, x, y, "", "cv-stub"), left = 39;
    t.appendChild(document.createTextNode("\u2190 "));
    for (var j = 0; j < ids.length && left > 0; j++) {
      var text = (j ? ", " : "") + m.label(ids[j]);
      if (text.length > left) text = text.slice(0, left - 1) + "\u2026";
      left -= text.length;
      var span = sv("tspan", {"class": "cv-const" + (m.source[ids[j]] ? " cv-source" : ""), "data-const": ids[j]}, t);
      span.textContent = text;
    }
  };
  View.prototype.apply = function () {
    this.vp.setAttribute("transform", "translate(" + this.tx + "," + this.ty + ") scale(" + this.k + ")");
    this.drawMini();
    if (this.canvasMode) this.paint();
  };
  /* What is drawn and where, in page coordinates (CSS pixels, as getBoundingClientRect): the
   * canvas drawing's equivalent of the SVG's data-node and data-edge attributes, the same in
   * both modes. nodes: {index: [x, y, w, h]}; scopes: [{s, path, open, box, title}] (title: an
   * open scope's title text); edges: [{edge: "u v" (a closed box as s<k>), points, link, path}]. */
  View.prototype.drawing = function () {
    var r = this.svg.getBoundingClientRect(), k = this.k, ox = r.left + this.tx, oy = r.top + this.ty;
    var m = this.m, nodes = {}, scopes = [], edges = [], key, q;
    function at(b) { return [ox + b[0] * k, oy + b[1] * k, b[2] * k, b[3] * k]; }
    for (key in this.nodeBox) nodes[key] = at(this.nodeBox[key]);
    for (key in this.scopeBox) {
      var s = +key, b = this.scopeBox[s], title = null;
      if (this.open[s]) title = at([b[0] + 6, b[1] + 2, this.textWidth("\u25be " + clip(m.scopeTitle(s), 60), this.scopeClass(s), "cv-name", "text"), 14]);
      scopes.push({s: s, path: m.path[s], open: !!this.open[s], box: at(b), title: title});
    }
    for (q = 0; q < this.drawnEdges.length; q++) {
      var dd = this.drawnEdges[q];
      edges.push({edge: itemId(dd.u) + " " + itemId(dd.v), link: dd.link, path: dd.path,
        points: dd.pts.map(function (p) { return [ox + p[0] * k, oy + p[1] * k]; })});
    }
    return {mode: this.canvasMode ? "canvas" : "svg", k: k, nodes: nodes, scopes: scopes, edges: edges,
      focused: this.focused, selected: this.selected, layouts: this.layout.stats};
  };
  /* the node, a stub's constant, and the innermost scope at a point of the page */
  View.prototype.hitAt = function (clientX, clientY) {
    var r = this.svg.getBoundingClientRect(), x = (clientX - r.left - this.tx) / this.k, y = (clientY - r.top - this.ty) / this.k;
    var out = {node: -1, konst: -1, scope: -1, head: false}, key, b, best = -1;
    for (key in this.nodeBox) {
      b = this.nodeBox[key];
      if (x >= b[0] && x <= b[0] + b[2] && y >= b[1] && y <= b[1] + b[3]) { out.node = +key; break; }
    }
    var spans = out.node >= 0 && this.scene ? this.spansOf(out.node) : null;
    if (spans && y <= b[1] + STUB_H) {
      for (var j = 0; j < spans.length; j++) if (x >= spans[j][1] && x <= spans[j][1] + spans[j][2]) out.konst = spans[j][0];
    }
    for (key in this.scopeBox) {
      b = this.scopeBox[key];
      if (x >= b[0] && x <= b[0] + b[2] && y >= b[1] && y <= b[1] + b[3] && (best < 0 || this.m.depth[+key] > this.m.depth[best])) best = +key;
    }
    out.scope = best;
    out.head = best > 0 && !!this.open[best] && y <= this.scopeBox[best][1] + HEAD - 4;
    return out;
  };
  /* the node drawn at a point of the page, or -1 */
  View.prototype.nodeAt = function (clientX, clientY) { return this.hitAt(clientX, clientY).node; };
  /* the overview: every drawn box at the minimap's scale (painted once per drawing), and the
   * part of the drawing in sight as a rectangle (on every pan and zoom) */
  View.prototype.paintMini = function () {
    var c = document.createElement("canvas"), f = Math.min(MINI_W / (this.size[0] + 20), MINI_H / (this.size[1] + 20));
    c.width = MINI_W; c.height = MINI_H;
    var g = c.getContext("2d"), key, b;
    this.miniScale = f;
    this.miniOff = [(MINI_W - this.size[0] * f) / 2, (MINI_H - this.size[1] * f) / 2];
    if (!g) { this.miniImage = null; return; }
    var ox = this.miniOff[0], oy = this.miniOff[1], style = getComputedStyle(this.root);
    g.strokeStyle = style.getPropertyValue("--cv-mini-scope").trim() || "#94a3b8";
    for (key in this.scopeBox) { b = this.scopeBox[key]; g.strokeRect(ox + b[0] * f, oy + b[1] * f, b[2] * f, b[3] * f); }
    g.fillStyle = style.getPropertyValue("--cv-mini-node").trim() || "#475569";
    for (key in this.nodeBox) { b = this.nodeBox[key]; g.fillRect(ox + b[0] * f, oy + b[1] * f, Math.max(1, b[2] * f), Math.max(1, b[3] * f)); }
    this.miniImage = c;
  };
  View.prototype.drawMini = function () {
    var c = this.mini, g = c.getContext && c.getContext("2d");
    if (!g || !this.miniImage) return;
    g.clearRect(0, 0, MINI_W, MINI_H);
    g.drawImage(this.miniImage, 0, 0);
    var v = this.viewSize(), f = this.miniScale, ox = this.miniOff[0], oy = this.miniOff[1];
    g.strokeStyle = getComputedStyle(this.root).getPropertyValue("--cv-accent").trim() || "#2563eb";
    g.lineWidth = 2;
    g.strokeRect(ox + (-this.tx / this.k) * f, oy + (-this.ty / this.k) * f, v[0] / this.k * f, v[1] / this.k * f);
  };
  View.prototype.viewSize = function () {
    var r = this.svg.getBoundingClientRect();
    return [r.width || 800, r.height || 500];
  };
  /* Fit: the whole drawing when it fits at a readable size (text >= 11 px: scale >= 1);
   * otherwise the readable size, fitting the width when it can, showing the top, and the
   * minimap gives the overview. The first picture is the same. */
  View.prototype.fit = function () {
    var v = this.viewSize(), w = this.size[0] + 40, h = this.size[1] + 40;
    this.k = Math.min(MAX_FIT, v[0] / w, v[1] / h);
    if (this.k < 1) this.k = 1;
    if (this.size[0] * this.k + 40 <= v[0]) this.tx = (v[0] - this.size[0] * this.k) / 2;
    else {  // wider than the view: the first node (the graph's entry) in the middle
      var first = null;
      for (var key in this.nodeBox) { first = this.nodeBox[key]; break; }
      var cx = first ? first[0] + first[2] / 2 : this.size[0] / 2;
      this.tx = Math.max(v[0] - 20 - this.size[0] * this.k, Math.min(20, v[0] / 2 - cx * this.k));
    }
    this.ty = this.size[1] * this.k + 40 <= v[1] ? (v[1] - this.size[1] * this.k) / 2 : 20;
    this.apply();
  };
  View.prototype.follow = function () {  /* live: readable size, the newest node in sight */
    var v = this.viewSize(), last = -1;
    for (var key in this.nodeBox) last = Math.max(last, +key);
    this.k = 1;
    var b = last >= 0 ? this.nodeBox[last] : [0, 0, 0, 0];
    this.tx = Math.min(10, v[0] - 20 - (b[0] + b[2]) * this.k);
    this.ty = Math.min(10, v[1] - 20 - (b[1] + b[3]) * this.k);
    this.apply();
  };
  View.prototype.zoomBy = function (f, cx, cy) {
    var v = this.viewSize();
    if (cx === undefined) { cx = v[0] / 2; cy = v[1] / 2; }
    var k = Math.max(0.02, Math.min(4, this.k * f));
    this.tx = cx - (cx - this.tx) * (k / this.k); this.ty = cy - (cy - this.ty) * (k / this.k); this.k = k;
    this.apply();
  };
  View.prototype.focus = function (i) {
    var m = this.m;
    if (m.unpack[i]) i = m.args[i][0];  // an unpack: the op it is drawn as
    else if (!m.drawn(i) && m.userStart[i + 1] > m.userStart[i]) i = m.users[m.userStart[i]];  // an annotation: its first reader
    this.focusedScope = -1;
    var then = function () {
      var b = this.nodeBox[i], v = this.viewSize();
      if (b) {
        this.k = Math.max(this.k, 0.8);
        this.tx = v[0] / 2 - (b[0] + b[2] / 2) * this.k; this.ty = v[1] / 2 - (b[1] + b[3] / 2) * this.k;
        this.apply();
      }
      this.select(i);
      if (this.live) liveState[this.key] = this.saveState(false);
    };
    if (this.expandTo(i) || this.focused !== i) { this.focused = i; this.update(then); }
    else then.call(this);
  };

  /* search */
  /* a shape in any spelling, as the types write it: "(16, 256)", "16x256", "[16,256]" -> "[16,256]" */
  function shapeQuery(q) {
    var found = q.match(/^[\[(]?\s*(\d+(?:\s*[,x\u00d7*]\s*\d+)*)\s*,?\s*[\])]?$/);
    if (!found || !/[,x\u00d7*\[(]/.test(q)) return null;  // a bare number is not a shape
    return "[" + found[1].split(/\s*[,x\u00d7*]\s*/).join(",") + "]";
  }
  /* search: scopes (by path), then ops and names, then types and file:line, then code */
  View.prototype.runSearch = function () {
    var q = this.search.value.trim().toLowerCase(), m = this.m, d = this.d;
    var res = this.results;
    while (res.firstChild) res.removeChild(res.firstChild);
    this.matches = []; this.matchAt = -1;
    if (!q) { res.style.display = "none"; return; }
    var shape = shapeQuery(q), ranked = [[], [], [], []], s, i;
    for (s = 1; s < m.ns; s++) {
      if (m.virt[s] && !m.fold[s]) continue;  // program-order groups are not names
      if ((m.path[s] + " " + m.names[s]).toLowerCase().indexOf(q) >= 0 && ranked[0].length < 50) ranked[0].push(~s);
    }
    for (i = 0; i < m.n; i++) {
      var hay = m.haystack(i);
      if (hay.indexOf(q) < 0 && !(shape && m.type(i).indexOf(shape) >= 0)) continue;
      var rank = (("%" + i + " " + m.label(i)).toLowerCase().indexOf(q) >= 0) ? 1 :
        (m.S[d.code[i]].toLowerCase().indexOf(q) >= 0 && (m.type(i) + " " + m.S[d.source[i]]).toLowerCase().indexOf(q) < 0) ? 3 : 2;
      if (ranked[rank].length < 200) ranked[rank].push(i);
    }
    var out = ranked[0].concat(ranked[1], ranked[2], ranked[3]).slice(0, 200);
    this.matches = out;
    for (var j = 0; j < Math.min(out.length, 50); j++) {
      var k = out[j], row = el("div", {"data-item": k, "data-at": j, "class": "cv-match"}, null, res);
      if (k < 0) {
        el("span", {"class": "cv-what"}, "scope " + clip(m.path[~k] || m.names[~k], 60), row);
        var up = m.parent[~k];
        while (up > 0 && m.virt[up]) up = m.parent[up];
        el("span", {"class": "cv-where"}, "  in " + (m.path[up] || "(top level)"), row);
        continue;
      }
      var src = m.S[d.source[k]];
      el("span", {"class": "cv-what"}, "%" + k + " " + clip(m.label(k), 28) + "  " + m.type(k) + (src ? "  " + src : ""), row);
      el("span", {"class": "cv-where"}, "  in " + (m.path[m.nodeScope[k]] || "(top level)"), row);
    }
    if (!out.length) el("div", {"class": "cv-nomatch"}, "no match", res);
    res.style.display = "block";
  };
  View.prototype.closeSearch = function (clear) {
    this.results.style.display = "none";
    if (clear) { this.search.value = ""; this.matches = []; this.matchAt = -1; }
  };
  /* choose a match: the results close, the scopes around it open, it is focused */
  View.prototype.choose = function (at) {
    this.matchAt = at;
    var it = this.matches[at];
    this.closeSearch(false);
    if (it >= 0) this.focus(it); else this.focusScope(~it);
  };
  View.prototype.nextMatch = function () {
    if (!this.matches.length) return;
    this.choose((this.matchAt + 1) % this.matches.length);
  };
  View.prototype.focusScope = function (s) {
    var m = this.m;
    for (var a = m.parent[s]; a > 0; a = m.parent[a]) this.open[a] = 1;
    this.focusedScope = s;
    this.update(function () {
      var b = this.scopeBox[s], v = this.viewSize();
      if (b) {
        this.k = Math.max(this.k, 1);
        this.tx = v[0] / 2 - (b[0] + Math.min(b[2], v[0] / this.k) / 2) * this.k;
        this.ty = Math.min(v[1] / 2 - (b[1] + b[3] / 2) * this.k, 40 - b[1] * this.k);
        this.apply();
      }
      var g = this.vp.querySelector('g.cv-scope[data-s="' + s + '"]');
      if (g && g.focus) g.focus({preventScroll: true});
    });
  };
  /* keys: / focuses search, arrows move along edges (up: an operand, down: a reader,
   * left/right: the other readers of the same operand), Enter opens or closes a scope,
   * Esc clears the search and the selection */
  View.prototype.onKey = function (ev) {
    var m = this.m, key = ev.key;
    if (ev.target === this.search) return;
    if (key === "/") { ev.preventDefault(); this.search.focus(); return; }
    if (key === "Escape") {
      this.closeSearch(true);
      this.selected = -1; this.focused = -1; this.focusedScope = -1;
      var on = this.vp.querySelectorAll(".cv-focus");
      for (var q = 0; q < on.length; q++) on[q].classList.remove("cv-focus");
      if (this.canvasMode) this.paint();
      return;
    }
    var g = ev.target.closest ? ev.target.closest("g.cv-node, g.cv-scope") : null, s = -1, node = -1;
    if (g) { if (g.classList.contains("cv-scope")) s = +g.getAttribute("data-s"); else node = +g.getAttribute("data-node"); }
    else if (this.canvasMode) { s = this.focusedScope; node = s >= 0 ? -1 : this.focused; }  // no element per node
    if (key === "Enter" && (s >= 0 || node >= 0)) {
      ev.preventDefault();
      if (s >= 0) { this.toggle(s); this.focusScope(s); }
      else {  // a node: close the scope it is in
        var inner = m.nodeScope[node];
        if (inner > 0) { this.toggle(inner); this.focusScope(inner); }
      }
      return;
    }
    var at = this.focused;
    if (at < 0 || ["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"].indexOf(key) < 0) return;
    ev.preventDefault();
    var self = this, drawnOnly = function (list) { return list.filter(function (i) { return m.drawn(i); }); };
    var readers = function (i) { return drawnOnly(Array.prototype.slice.call(m.users, m.userStart[i], m.userStart[i + 1])); };
    var next = -1;
    if (key === "ArrowUp") next = drawnOnly(m.args[at])[0];
    else if (key === "ArrowDown") next = readers(at)[0];
    else {
      var from = drawnOnly(m.args[at])[0], peers = from === undefined ? [] : readers(from);
      var k = peers.indexOf(at);
      if (peers.length > 1) next = peers[(k + (key === "ArrowRight" ? 1 : peers.length - 1)) % peers.length];
    }
    if (next === undefined || next < 0) return;
    this.focus(next);
    var el2 = self.vp.querySelector('g.cv-node[data-node="' + next + '"]');
    if (el2 && el2.focus) el2.focus({preventScroll: true});
  };

  /* hover and the side panel */
  View.prototype.tipText = function (i) {
    var m = this.m, d = this.d, S = m.S, lines = [m.label(i) + "  (%" + i + ", " + m.kindNames[d.kind[i]] + ")"];
    var ty = m.type(i);
    if (ty) {
      var br = ty.indexOf("[");
      lines.push("shape (" + ty.slice(br + 1, -1) + ")  dtype " + ty.slice(0, br));
    }
    if (S[d.params[i]]) lines.push(S[d.params[i]]);
    if (S[d.source[i]]) lines.push(S[d.source[i]] + (S[d.code[i]] ? "\n  " + S[d.code[i]] : ""));
    var v = d.values[i];
    if (v) lines.push("min " + fmt(v[0]) + "  max " + fmt(v[1]) + "  mean " + fmt(v[2]) + "  nan " + v[4] + "  inf " + v[5]);
    if (i === m.nan) lines.push("first NaN/Inf");
    return lines.join("\n");
  };
  View.prototype.showTip = function (i, ev) {
    this.tip.textContent = this.tipText(i);
    this.tip.style.display = "block";
    this.tip.setAttribute("data-i", i);
    this.moveTip(ev);
  };
  View.prototype.moveTip = function (ev) {
    var r = this.root.getBoundingClientRect();
    this.tip.style.left = (ev.clientX - r.left + 14) + "px";
    this.tip.style.top = (ev.clientY - r.top + 14) + "px";
  };
  View.prototype.select = function (i) {
    var m = this.m, d = this.d, S = m.S, p = this.panel;
    this.selected = i;
    var prev = this.vp.querySelectorAll("g.cv-node.cv-focus");
    for (var q = 0; q < prev.length; q++) prev[q].classList.remove("cv-focus");
    var me = this.vp.querySelector('g.cv-node[data-i="' + i + '"]');
    if (me) me.classList.add("cv-focus");
    this.focused = i;
    if (this.canvasMode) this.paint();
    while (p.firstChild) p.removeChild(p.firstChild);
    p.setAttribute("data-i", i);
    el("pre", {"class": "cv-detail"}, this.tipText(i), p);
    var scopePath = m.path[m.nodeScope[i]];
    if (scopePath) el("div", {"class": "cv-scope-path"}, "scope " + scopePath, p);
    function list(title, ids) {
      el("h4", {}, title + " (" + ids.length + ")", p);
      var ul = el("ul", {}, null, p);
      for (var j = 0; j < Math.min(ids.length, 60); j++) {
        el("li", {"data-i": ids[j]}, "%" + ids[j] + " " + clip(m.label(ids[j]), 30) + "  " + m.type(ids[j]), ul);
      }
    }
    list("inputs", m.args[i]);
    if (i === m.nan) el("div", {"class": "cv-operand"}, this.operandText(), p);
    list("outputs", Array.prototype.slice.call(m.users, m.userStart[i], m.userStart[i + 1]));
    var v = d.values[i];
    if (v) {
      el("h4", {}, "value", p);
      el("pre", {"class": "cv-value"}, "shape " + (m.type(i) || "?") + "\nmin " + fmt(v[0]) + "  max " + fmt(v[1]) +
        "\nmean " + fmt(v[2]) + "  std " + fmt(v[3]) + "\nNaN " + v[4] + "  Inf " + v[5], p);
      if (v[9] && v[9].length) {
        el("pre", {"class": "cv-first"}, "first values: " + v[9].map(function (x) {
          return typeof x === "number" ? fmt(x) : String(x);
        }).join(", "), p);
      }
      if (v[6] && v[6].length) {
        var top = Math.max.apply(null, v[6]) || 1, W = 240, H = 40, bw = W / v[6].length;
        var hs = sv("svg", {"class": "cv-hist", width: W, height: H + 12}, p);
        for (var j2 = 0; j2 < v[6].length; j2++) {
          var bh = Math.max(v[6][j2] ? 1 : 0, v[6][j2] / top * H);
          sv("rect", {x: j2 * bw, y: H - bh, width: bw - 1, height: bh}, hs);
        }
        svText(hs, 0, H + 10, fmt(v[7]), "cv-type");
        svText(hs, W - 40, H + 10, fmt(v[8]), "cv-type");
      }
    }
    var vio = d.violations.filter(function (x) { return x.node === i; });
    if (vio.length) el("pre", {"class": "cv-message"}, vio[0].message, p);
    void S;
  };
  /* which operand of the first NaN/Inf holds NaN/Inf, or that the op made it */
  View.prototype.operandText = function () {
    var m = this.m, nan = m.nan, bad = this.d.marks.nonfinite_operand;
    if (bad === undefined) return "its operands are finite: " + m.label(nan) + " made the NaN/Inf";
    var k = m.args[nan].indexOf(bad);
    return "operand " + k + " (%" + bad + " " + m.label(bad) + ") holds NaN/Inf";
  };
  View.prototype.listProblems = function () {
    var m = this.m, d = this.d, ul = this.problems;
    for (var j = 0; j < d.violations.length; j++) {
      var v = d.violations[j];
      el("li", {"data-i": v.node, "class": v.level === "error" ? "cv-problem" : "cv-warning"},
        v.level + ": " + v.kind + " (" + v.call + ") at " + (m.S[d.source[v.node]] || "%" + v.node), ul);
    }
    if (m.nan !== undefined) {
      el("li", {"data-i": m.nan, "class": "cv-problem cv-first-nan"},
        "first NaN/Inf: %" + m.nan + " " + m.label(m.nan) + " at " + (m.S[d.source[m.nan]] || "") +
        "; " + this.operandText(), ul);
      for (var sj = 0; sj < (d.sources || []).length; sj++) {
        var src = d.sources[sj];
        el("li", {"data-i": src, "class": "cv-problem cv-nan-source"},
          "non-finite from the start: %" + src + " " + m.label(src) + " (" + m.kindNames[d.kind[src]] + ")", ul);
      }
    }
    if (d.marks.diverged !== undefined) {
      el("li", {"data-i": d.marks.diverged, "class": "cv-problem"}, "first divergence: %" + d.marks.diverged + " " + m.label(d.marks.diverged), ul);
    }
    if (!ul.firstChild) el("li", {"class": "cv-none"}, "none", ul);
  };

  /* base64 of gzip -> text (the data is stored once, compressed: capviz/render/view.py) */
  function inflate(b64) {
    var bin = atob(b64.trim()), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }
  function boot(root) {
    if (root.getAttribute("data-booted")) return;
    root.setAttribute("data-booted", "1");
    if (window.CapvizCSS && !root.querySelector("style.cv-style")) {
      var style = document.createElement("style");
      style.className = "cv-style";
      style.textContent = window.CapvizCSS;
      root.insertBefore(style, root.firstChild);
    }
    var data = null, model = new Model(), steps = null;
    function pump() {  // each step in its own short task: the page stays responsive
      var start = performance.now();
      if (steps === null) { steps = modelSteps.call(model, data); setTimeout(pump, 0); return; }
      while (performance.now() - start < 12) {  // a step is a few ms; stop before the next
        if (steps.next().done) { setTimeout(show, 0); return; }
      }
      setTimeout(pump, 0);
    }
    function show() {
      var fallback = root.querySelector(".cv-fallback");
      if (fallback) fallback.parentNode.removeChild(fallback);
      root.capvizView = new View(root, data, model);
      requestAnimationFrame(function () {
        root.setAttribute("data-ready", "1");
        if (window.performance && performance.mark) performance.mark("capviz-drawn");
      });
    }
    var blob = root.querySelector("script.cv-blob");
    inflate(blob.textContent).then(function (text) {
      data = JSON.parse(text);
      setTimeout(pump, 0);
    }, function (err) { root.setAttribute("data-error", String(err)); });
  }
  window.CapvizView = {boot: boot, Model: Model, inflate: inflate};
})();
