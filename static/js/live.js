/*
 * live.js: keeps the console's fragments current without reloading the page.
 *
 * The contract for pages (new pages plug in with markup only):
 *
 *   <section id="node-grid" data-live-topic="nodes" hx-get="/nodes/_grid?partition=debug"
 *            hx-trigger="live" hx-swap="outerHTML"> ... </section>
 *
 *   - data-live-topic: space-separated topics ("jobs", "nodes", "partitions", "config", ...),
 *     as cluster.publish.console_changed() names them.
 *   - hx-get: the fragment URL that renders this same element again (the response replaces it,
 *     hx-swap defaults to outerHTML).  An id is needed so a refresh in flight is not doubled.
 *   - hx-trigger="live" only stops htmx from fetching on a click; live.js does the fetching.
 *
 * How: a websocket to /ws/console/ receives {"type": "changed", "topics": [...]}; the topics
 * are collected for 300 ms, then every element subscribed to one of them is re-fetched once.
 * When the socket closes, it reconnects with exponential backoff (1 s .. 30 s, jittered) and
 * meanwhile every subscribed element is polled every 5 s (not while the tab is hidden; at
 * once when it shows again).  #live-status says which of the two is happening.
 */
(function () {
  "use strict";

  var body = document.body;
  var WS_PATH = body.getAttribute("data-live-ws") || "/ws/console/";
  var POLL_MS = parseInt(body.getAttribute("data-live-poll") || "5000", 10);
  var DEBOUNCE_MS = 300;
  var BACKOFF_MIN_MS = 1000;
  var BACKOFF_MAX_MS = 30000;
  var LABELS = {
    connecting: ["connecting…", "Connecting to the live feed"],
    live: ["live", "Updates are pushed over a websocket as they happen"],
    polling: ["polling", "Live feed lost: refreshing every " + POLL_MS / 1000 + " s while reconnecting"],
    offline: ["offline", "The controller does not answer; retrying"],
  };

  var loadedAt = Date.now();
  var st = {
    mode: "connecting",
    socket: null,
    attempts: 0,
    reconnectTimer: null,
    pollTimer: null,
    flushTimer: null,
    pending: new Set(), // topics changed since the last flush
    pendingAll: false,
    inflight: new Set(), // element ids being fetched
    dirty: new Set(), // element ids that changed again while being fetched
    missed: false, // the socket was down: changes may have been missed
    asked: {}, // element id -> a person's requests in flight for it
    stale: new Set(), // element ids whose live refresh was dropped for a person's request
  };

  function setMode(mode) {
    st.mode = mode;
    var el = document.getElementById("live-status");
    if (!el) return;
    el.setAttribute("data-mode", mode);
    el.textContent = LABELS[mode][0];
    el.title = LABELS[mode][1];
  }

  function subscribed(topics) {
    var nodes = document.querySelectorAll("[data-live-topic][hx-get]");
    var out = [];
    for (var i = 0; i < nodes.length; i++) {
      var el = nodes[i];
      if (topics === null) {
        out.push(el);
        continue;
      }
      var mine = el.getAttribute("data-live-topic").split(/\s+/);
      for (var j = 0; j < mine.length; j++) {
        if (topics.has(mine[j])) {
          out.push(el);
          break;
        }
      }
    }
    // An element inside another one being refreshed comes back with its parent.
    return out.filter(function (el) {
      return !out.some(function (other) { return other !== el && other.contains(el); });
    });
  }

  function refresh(el) {
    var key = el.id;
    if (key && st.inflight.has(key)) {
      st.dirty.add(key);
      return;
    }
    if (key) st.inflight.add(key);
    // Keep keyboard focus where it was: the swap replaces the focused element.
    var active = document.activeElement;
    var focusId = active && active !== body && el.contains(active) ? active.id : "";
    var done = function () {
      if (focusId) {
        var again = document.getElementById(focusId);
        if (again) again.focus({ preventScroll: true });
      }
      if (!key) return;
      st.inflight.delete(key);
      if (st.dirty.delete(key)) {
        var fresh = document.getElementById(key);
        if (fresh) refresh(fresh);
      }
    };
    var swap = el.getAttribute("hx-swap") || "outerHTML";
    window.htmx
      .ajax("GET", el.getAttribute("hx-get"), {
        source: el, target: el, swap: swap, headers: { "X-Fsched-Live": "1" },
      })
      .then(done, done);
  }

  // A person's request (a filter, a sort, a page) and a live refresh of the same element may
  // be in flight together.  The refresh asked with the element's old URL: swapped in first,
  // it would also detach the element the person's request is to replace, so that answer
  // would land nowhere and the old rows would stay under the new filter.  Drop such a
  // refresh, and refresh once more after the person's answer, so no change is missed.
  function isLive(detail) {
    var cfg = detail && detail.requestConfig;
    return !!(cfg && cfg.headers && cfg.headers["X-Fsched-Live"]);
  }

  document.addEventListener("htmx:beforeRequest", function (ev) {
    var target = ev.detail && ev.detail.target;
    if (isLive(ev.detail) || !target || !target.id) return;
    st.asked[target.id] = (st.asked[target.id] || 0) + 1;
  });

  document.addEventListener("htmx:afterRequest", function (ev) {
    var target = ev.detail && ev.detail.target;
    if (isLive(ev.detail) || !target || !target.id || !st.asked[target.id]) return;
    var id = target.id;
    st.asked[id] -= 1;
    if (st.asked[id] > 0) return;
    delete st.asked[id];
    if (st.stale.delete(id)) {
      var fresh = document.getElementById(id);
      if (fresh) refresh(fresh);
    }
  });

  document.addEventListener("htmx:beforeSwap", function (ev) {
    var target = ev.detail && ev.detail.target;
    if (!isLive(ev.detail) || !target || !target.id || !st.asked[target.id]) return;
    ev.detail.shouldSwap = false;
    st.stale.add(target.id);
  });

  function flush() {
    st.flushTimer = null;
    if (document.hidden) return; // picked up by the visibilitychange handler
    var topics = st.pendingAll ? null : new Set(st.pending);
    st.pending.clear();
    st.pendingAll = false;
    subscribed(topics).forEach(refresh);
  }

  // Collect topics for DEBOUNCE_MS after the first one, then refresh once: a burst of
  // changes (a scheduler pass starting 500 jobs) costs one fetch per fragment, and a
  // steady stream still shows within DEBOUNCE_MS.
  function schedule(topics) {
    if (topics === null) st.pendingAll = true;
    else topics.forEach(function (t) { st.pending.add(t); });
    if (st.flushTimer === null) st.flushTimer = setTimeout(flush, DEBOUNCE_MS);
  }

  function poll() {
    if (!document.hidden) schedule(null);
  }

  function startPolling() {
    if (st.pollTimer === null) st.pollTimer = setInterval(poll, POLL_MS);
  }

  function stopPolling() {
    if (st.pollTimer !== null) clearInterval(st.pollTimer);
    st.pollTimer = null;
  }

  function reconnectLater() {
    var delay = Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * Math.pow(2, st.attempts));
    delay = delay / 2 + Math.random() * (delay / 2);
    st.attempts += 1;
    clearTimeout(st.reconnectTimer);
    st.reconnectTimer = setTimeout(connect, delay);
  }

  function connect() {
    st.reconnectTimer = null;
    if (!("WebSocket" in window)) {
      setMode("polling");
      startPolling();
      return;
    }
    var url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + WS_PATH;
    var ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      lost();
      return;
    }
    st.socket = ws;
    ws.onopen = function () {
      st.attempts = 0;
      stopPolling();
      setMode("live");
      // Whatever changed while we were not listening (or since this page was rendered,
      // if the handshake was slow) is fetched now.
      if (st.missed || Date.now() - loadedAt > 1500) schedule(null);
      st.missed = false;
    };
    ws.onmessage = function (ev) {
      var msg;
      try {
        msg = JSON.parse(ev.data);
      } catch (e) {
        return;
      }
      if (msg && msg.type === "changed" && Array.isArray(msg.topics)) schedule(new Set(msg.topics));
    };
    ws.onclose = function () {
      if (st.socket !== ws) return;
      st.socket = null;
      lost();
    };
  }

  function lost() {
    st.missed = true;
    if (st.mode !== "offline") setMode("polling");
    startPolling();
    reconnectLater();
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) return;
    if (st.pollTimer !== null) schedule(null);
    else if (st.pending.size || st.pendingAll) schedule(new Set());
    if (st.socket === null && st.reconnectTimer !== null) {
      // Back from the background: try the socket now rather than at the end of a long backoff.
      clearTimeout(st.reconnectTimer);
      st.attempts = 0;
      connect();
    }
  });

  // A poll that cannot reach the server says so; the next one that can clears it.
  document.addEventListener("htmx:sendError", function () {
    if (st.mode !== "live") setMode("offline");
  });
  document.addEventListener("htmx:afterRequest", function (ev) {
    if (st.mode === "offline" && ev.detail && ev.detail.successful) setMode("polling");
  });

  // For tests and the curious: window.fschedLive.mode, .socket, .refresh(["nodes"]).
  window.fschedLive = {
    get mode() { return st.mode; },
    get socket() { return st.socket; },
    refresh: function (topics) { schedule(topics ? new Set(topics) : null); },
  };

  setMode("connecting");
  connect();
})();
