// Atoll dashboard: says whether the page is live (its event stream connected and the
// control plane's stream behind it alive), reconnecting, or stale. Pages work without it.
(function () {
  "use strict";
  var STALE_MS = 15000; // three heartbeats missed
  var live = document.getElementById("live");
  var lastBeat = 0;
  var upstreamLive = true;
  var source = null;

  function show(state, text) {
    if (!live) return;
    live.setAttribute("data-state", state);
    var label = live.querySelector(".live-text");
    if (label && label.textContent !== text) label.textContent = text;
  }

  function refresh() {
    if (!source) { show("connecting", "connecting"); return; }
    if (source.readyState === 0) { show("reconnecting", "reconnecting"); return; }
    if (source.readyState === 2) { show("stale", "stale: not connected"); return; }
    if (Date.now() - lastBeat > STALE_MS) { show("stale", "stale: no heartbeat"); return; }
    if (!upstreamLive) { show("stale", "stale: control plane events lost"); return; }
    show("live", "live");
  }

  function onHeartbeat(event) {
    lastBeat = Date.now();
    try { upstreamLive = JSON.parse(event.data).live !== false; } catch (e) { upstreamLive = true; }
    refresh();
  }

  document.body.addEventListener("htmx:sseOpen", function (event) {
    var opened = event.detail && event.detail.source;
    if (!opened || opened === source) { refresh(); return; }
    source = opened;
    window.atollEvents = source;
    source.addEventListener("heartbeat", onHeartbeat);
    source.addEventListener("upstream", function (e) {
      try { upstreamLive = JSON.parse(e.data).live !== false; } catch (err) { /* keep */ }
      refresh();
    });
    document.dispatchEvent(new CustomEvent("atoll:events", { detail: source }));
    refresh();
  });
  document.body.addEventListener("htmx:sseError", function () { refresh(); });

  // A live region swapped while the keyboard focus is inside it would drop the focus to
  // the top of the page (htmx puts it back only on elements with an id): put it back on
  // the same control in the new region, so a keyboard user keeps their place.
  var FOCUSABLE = "a[href], button, input, select, textarea, summary, [tabindex]";
  var kept = null;

  function keyOf(e) {
    var tag = e.tagName.toLowerCase();
    var text = /^(a|button|summary)$/.test(tag) ? e.textContent.trim() : "";
    return [tag, e.getAttribute("href") || e.getAttribute("name") || e.getAttribute("aria-label") || e.getAttribute("aria-labelledby") || "", text].join("|");
  }

  function focusables(region) { return Array.prototype.slice.call(region.querySelectorAll(FOCUSABLE)); }

  document.body.addEventListener("htmx:beforeSwap", function (event) {
    var region = event.detail.target;
    var active = document.activeElement;
    kept = null;
    if (!region || !region.id || !active || active === document.body || active.id || !region.contains(active)) return;
    kept = { region: region.id, index: focusables(region).indexOf(active), key: keyOf(active) };
  });
  document.body.addEventListener("htmx:afterSwap", function () {
    var was = kept;
    kept = null;
    if (!was || (document.activeElement && document.activeElement !== document.body)) return;
    var region = document.getElementById(was.region);
    if (!region) return;
    var all = focusables(region);
    var same = all.filter(function (e) { return keyOf(e) === was.key; });
    var back = all[was.index] && keyOf(all[was.index]) === was.key ? all[was.index] : same[0] || all[Math.min(was.index, all.length - 1)];
    if (back) back.focus({ preventScroll: true });
  });
  setInterval(refresh, 1000);
  refresh();
})();
