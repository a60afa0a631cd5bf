// distlock dashboard: reads the server-sent snapshots of
// GET /v1/dashboard/events with fetch (so that a bearer token can be sent),
// renders the locks (ttl counting down between snapshots) and a chart.
// No framework, no build step; every value is put in the page as text.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const tokenKey = "distlock-token";
  let latest = null;      // the last snapshot
  let receivedAt = 0;     // performance.now() when it came
  let retryDelay = 500;

  function token() { return sessionStorage.getItem(tokenKey) || ""; }

  function setConn(state, title) {
    const c = $("conn");
    c.className = "conn conn-" + state;
    c.title = title;
  }

  function notice(text) {
    const n = $("notice");
    n.hidden = !text;
    n.textContent = text || "";
  }

  async function connect() {
    const headers = { "Accept": "text/event-stream" };
    if (token()) headers["Authorization"] = "Bearer " + token();
    setConn("wait", "connecting");
    let resp;
    try {
      resp = await fetch("/v1/dashboard/events", { headers, cache: "no-store" });
    } catch (e) {
      return reconnect("cannot reach the server: " + e.message);
    }
    if (resp.status === 401 || resp.status === 403) {
      $("login").hidden = false;
      $("login-error").textContent = token() ? "that token was refused (" + resp.status + ")" : "";
      setConn("down", "needs a token");
      return;
    }
    if (!resp.ok) {
      let msg = "HTTP " + resp.status;
      try { msg = (await resp.json()).error.message; } catch (e) { /* keep the status */ }
      return reconnect(msg);
    }
    $("login").hidden = true;
    retryDelay = 500;
    setConn("ok", "live");
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          handleEvent(buf.slice(0, i));
          buf = buf.slice(i + 2);
        }
      }
    } catch (e) {
      return reconnect("the live connection broke: " + e.message);
    }
    reconnect("the server closed the live connection");
  }

  function reconnect(why) {
    setConn("down", why);
    notice(why + "; reconnecting…");
    setTimeout(connect, retryDelay);
    retryDelay = Math.min(retryDelay * 2, 10000);
  }

  function handleEvent(block) {
    let name = "message", data = "";
    for (const line of block.split("\n")) {
      if (line.startsWith("event: ")) name = line.slice(7);
      else if (line.startsWith("data: ")) data += line.slice(6);
    }
    if (name === "shutdown") {
      notice("the server is shutting down");
      return;
    }
    if (name !== "snapshot") return;
    latest = JSON.parse(data);
    receivedAt = performance.now();
    render();
  }

  function render() {
    const s = latest;
    $("engine").textContent = "engine: " + s.engine;
    $("version").textContent = "distlock " + s.version;
    if (s.embedded) {
      notice("Embedded engine: this server process is the lock authority; its locks are dropped when it stops.");
    } else {
      notice("");
    }
    $("stat-locks").textContent = String(s.locks.length) + (s.truncated ? "+" : "");
    $("stat-waiting").textContent = String(s.waiting);
    $("stat-acq").textContent = String(sum(s.timeline.acquired));
    $("stat-lost").textContent = String(sum(s.timeline.lost));
    renderLocks(s);
    renderWaitFor(s.waitfor);
    renderElections(s);
    renderChart(s.timeline);
  }

  function sum(a) { return a.reduce((x, y) => x + y, 0); }

  function cell(tr, cls, text, title) {
    const td = document.createElement("td");
    if (cls) td.className = cls;
    td.textContent = text;
    if (title) td.title = title;
    tr.appendChild(td);
    return td;
  }

  function renderLocks(s) {
    const body = $("locks-body");
    body.textContent = "";
    if (s.locks.length === 0) {
      const tr = document.createElement("tr");
      tr.className = "empty";
      const td = cell(tr, "", s.list_error ? "cannot list: " + s.list_error : "no lock is held");
      td.colSpan = 8;
      body.appendChild(tr);
    }
    for (const l of s.locks) {
      const tr = document.createElement("tr");
      tr.dataset.name = l.name;
      cell(tr, "name", l.name);
      const holders = l.holders || [];
      let ttlMs = l.ttl_ms === undefined ? 0 : l.ttl_ms;
      if (l.kind) {
        // A shared lock: every holder with its weight (semaphore) or side
        // (reader-writer lock); the ttl is the soonest holder's.
        cell(tr, "kind", kindText(l), l.kind === "semaphore" ? "permits held / limit" : "reader-writer lock: its current mode");
        const who = holders.map((h) => l.kind === "rwlock" ? h.holder_id + " (" + h.mode + ")" : h.holder_id + " \u00d7" + h.weight);
        cell(tr, "holder", who.join(", "), "holder ids (fingerprints of the owner tokens)" + (l.kind === "semaphore" ? " \u00d7 permits held" : " and their mode"));
        cell(tr, "meta", [...new Set(holders.map((h) => h.metadata || "").filter((m) => m))].join("; "));
        ttlMs = holders.length ? Math.min(...holders.map((h) => h.ttl_ms)) : 0;
      } else {
        cell(tr, "kind", "mutex");
        cell(tr, "holder", l.holder_id || "", "holder id (a fingerprint of the owner token)" + (l.count > 1 ? "; holds: " + l.count : ""));
        cell(tr, "meta", l.metadata || "");
      }
      const ttl = cell(tr, "ttl", "");
      ttl.dataset.ttl = String(ttlMs);
      ttl.dataset.full = String(ttlMs || 0);
      const text = document.createElement("span");
      ttl.appendChild(text);
      const bar = document.createElement("div");
      bar.className = "bar";
      bar.appendChild(document.createElement("div"));
      ttl.appendChild(bar);
      cell(tr, "num token", l.token ? String(l.token) : "");
      cell(tr, "num token", l.high_water ? String(l.high_water) : "");
      cell(tr, "num", String(l.waiters));
      body.appendChild(tr);
    }
    $("locks-note").textContent = s.truncated ? "showing the first " + s.locks.length + " locks by name" : "";
    tick();
  }

  // kindText describes a shared lock: a semaphore's permits in use, a
  // reader-writer lock's mode and readers.
  function kindText(l) {
    const holders = l.holders || [];
    if (l.kind === "semaphore") {
      return "semaphore " + sum(holders.map((h) => h.weight)) + "/" + l.limit;
    }
    if (!l.held) return "rwlock (free)";
    if (l.mode === "write") return "rwlock (write)";
    return "rwlock (read \u00d7" + holders.length + ")";
  }

  // renderWaitFor shows the wait-for graph's edges, and each cycle (a
  // deadlock across names) as an alert that names its owners and waits.
  function renderWaitFor(g) {
    const edges = (g && g.edges) || [], cycles = (g && g.cycles) || [];
    const box = $("cycles");
    box.textContent = "";
    for (const c of cycles) {
      const div = document.createElement("div");
      div.className = "cycle";
      const title = document.createElement("strong");
      title.textContent = "Deadlock: a cycle of " + c.edges.length + " owners";
      div.appendChild(title);
      const ul = document.createElement("ul");
      for (const e of c.edges) {
        const li = document.createElement("li");
        li.textContent = e.from.id + " waits for " + e.lock + " (" + fmtDuration(e.waited_ms) + ") held by " + e.to.id;
        ul.appendChild(li);
      }
      div.appendChild(ul);
      box.appendChild(div);
    }
    const body = $("waitfor-body");
    body.textContent = "";
    if (edges.length === 0) {
      const tr = document.createElement("tr");
      tr.className = "empty";
      cell(tr, "", "nobody waits for a lock held by a known owner").colSpan = 5;
      body.appendChild(tr);
    }
    const inCycle = new Set();
    for (const c of cycles) for (const e of c.edges) inCycle.add(e.from.id + "\u0000" + e.lock);
    for (const e of edges) {
      const tr = document.createElement("tr");
      if (inCycle.has(e.from.id + "\u0000" + e.lock)) tr.className = "in-cycle";
      cell(tr, "holder", e.from.id, "waiter's owner (fingerprint)");
      cell(tr, "name", e.lock);
      cell(tr, "holder", e.to.id, "holder's owner (fingerprint)");
      cell(tr, "num", fmtDuration(e.waited_ms));
      cell(tr, "num", e.holder_ttl_ms < 0 ? "never" : fmtDuration(e.holder_ttl_ms || 0));
      body.appendChild(tr);
    }
    const notes = [];
    if (g && g.queue_unknown) notes.push("this engine does not list its waiters: some waits cannot be drawn");
    $("waitfor-note").textContent = notes.join("; ");
  }

  function renderElections(s) {
    const body = $("elections-body");
    body.textContent = "";
    const list = s.elections || [];
    if (list.length === 0 || s.elections_error) {
      const tr = document.createElement("tr");
      tr.className = "empty";
      const why = s.elections_error ? "cannot read: " + s.elections_error : "no election seen";
      cell(tr, "", why).colSpan = 5;
      body.appendChild(tr);
    }
    for (const e of list) {
      const tr = document.createElement("tr");
      tr.dataset.name = e.name;
      cell(tr, "name", e.name);
      cell(tr, "meta", e.elected ? e.value : "(no leader)");
      cell(tr, "num token", e.term ? String(e.term) : "");
      cell(tr, "since", e.since_ms ? fmtDuration(s.now_ms - e.since_ms) + " ago" : "",
        e.since_ms ? new Date(e.since_ms).toISOString() : "");
      cell(tr, "num", String(e.followers));
      body.appendChild(tr);
    }
  }

  // tick counts the ttls down between snapshots.
  const maxSeen = new Map();
  function tick() {
    if (!latest) return;
    const elapsed = performance.now() - receivedAt;
    for (const td of document.querySelectorAll("#locks-body td.ttl")) {
      const ttl = Number(td.dataset.ttl);
      const name = td.parentElement.dataset.name;
      const span = td.firstChild, bar = td.lastChild;
      if (ttl < 0) {
        span.textContent = "never (leaked?)";
        bar.hidden = true;
        continue;
      }
      const left = Math.max(0, ttl - elapsed);
      const full = Math.max(maxSeen.get(name) || 0, ttl);
      maxSeen.set(name, full);
      span.textContent = fmtDuration(left);
      const frac = full > 0 ? left / full : 0;
      bar.firstChild.style.width = (100 * frac).toFixed(1) + "%";
      bar.className = frac < 0.25 ? "bar low" : "bar";
    }
  }

  function fmtDuration(ms) {
    if (ms >= 3600000) return (ms / 3600000).toFixed(1) + " h";
    if (ms >= 60000) return Math.floor(ms / 60000) + " m " + Math.floor((ms % 60000) / 1000) + " s";
    if (ms >= 10000) return (ms / 1000).toFixed(0) + " s";
    return (ms / 1000).toFixed(1) + " s";
  }

  const svgNS = "http://www.w3.org/2000/svg";
  function renderChart(t) {
    const svg = $("chart");
    svg.textContent = "";
    const W = 720, H = 160, pad = 18;
    const n = t.acquired.length;
    const top = Math.max(1, ...t.acquired, ...t.waits, ...t.lost);
    for (const f of [0, 0.5, 1]) {
      const y = pad + (H - 2 * pad) * (1 - f);
      const line = document.createElementNS(svgNS, "line");
      line.setAttribute("class", "grid");
      line.setAttribute("x1", "0"); line.setAttribute("x2", String(W));
      line.setAttribute("y1", String(y)); line.setAttribute("y2", String(y));
      svg.appendChild(line);
      const label = document.createElementNS(svgNS, "text");
      label.setAttribute("class", "axis");
      label.setAttribute("x", "4"); label.setAttribute("y", String(y - 2));
      label.textContent = f === 0.5 && top % 2 === 1 ? (top / 2).toFixed(1) : String(top * f);
      svg.appendChild(label);
    }
    const series = [["acq", t.acquired], ["wait", t.waits], ["lost", t.lost]];
    for (const [cls, values] of series) {
      const pts = values.map((v, i) => {
        const x = n > 1 ? (W * i) / (n - 1) : 0;
        const y = pad + (H - 2 * pad) * (1 - v / top);
        return x.toFixed(1) + "," + y.toFixed(1);
      });
      const pl = document.createElementNS(svgNS, "polyline");
      pl.setAttribute("class", cls);
      pl.setAttribute("points", pts.join(" "));
      svg.appendChild(pl);
    }
    const label = document.createElementNS(svgNS, "text");
    label.setAttribute("class", "axis");
    label.setAttribute("x", String(W - 4)); label.setAttribute("y", String(H - 4));
    label.setAttribute("text-anchor", "end");
    label.textContent = "now";
    svg.appendChild(label);
  }

  $("login").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(tokenKey, $("token").value.trim());
    $("token").value = "";
    connect();
  });

  setInterval(tick, 200);
  connect();
})();
