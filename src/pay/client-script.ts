/**
 * The page's only script (inline, CSP nonce): copy buttons, countdown, live status over ONE
 * EventSource. Everything it shows is already in the server-rendered page; it only toggles the
 * rendered panels and fills `data-field` spans with text (never markup). Plain ES2017, no build step.
 */
export const CLIENT_SCRIPT = `(function () {
  "use strict";
  var root = document.getElementById("pay");
  if (!root) return;
  var data = {
    status: root.getAttribute("data-status"),
    received: root.getAttribute("data-received"),
    detected: root.getAttribute("data-detected"),
    current: root.getAttribute("data-confirmations"),
    required: root.getAttribute("data-required"),
    remaining: root.getAttribute("data-remaining"),
    txHash: null,
    confirmedAt: null
  };
  var dec = root.getAttribute("data-decimal") || ".";
  var locale = root.getAttribute("data-locale") || undefined;
  var qrAmount = root.getAttribute("data-qr-amount") || "";
  var deadline = Date.now() + Number(root.getAttribute("data-remaining-ms"));
  var source = null;

  function amount(text) { return String(text).replace(".", dec); }
  // A moment in the page's language and the browser's own time zone (the server wrote it in UTC);
  // the options mirror TIME_FORMAT (page.ts).
  function local(iso) {
    var d = new Date(iso);
    if (!iso || isNaN(d.getTime())) return "";
    try {
      return new Intl.DateTimeFormat(locale, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short" }).format(d);
    } catch (e) {
      return iso.slice(0, 19).replace("T", " ") + " UTC";
    }
  }
  function localTimes() {
    var times = root.querySelectorAll("time[data-local]");
    for (var i = 0; i < times.length; i++) {
      var iso = times[i].getAttribute("datetime");
      if (iso) times[i].textContent = local(iso);
    }
  }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  // Mirrors pageState (page.ts).
  function state() {
    if (data.status === "confirmed") return "paid";
    var received = Number(data.received), detected = Number(data.detected);
    var seen = Math.max(received, detected);
    var confirming = data.status === "pending" && detected > received;
    if (confirming && (seen >= Number(root.getAttribute("data-amount")) || Date.now() >= deadline)) return "confirming";
    var partial = data.status === "failed" ? received > 0 : seen > 0;
    if (data.status === "failed" || Date.now() >= deadline) return partial ? "partialExpired" : "expired";
    return partial ? "partial" : "waiting";
  }
  function setField(name, text) {
    var els = root.querySelectorAll('[data-field="' + name + '"]');
    for (var i = 0; i < els.length; i++) els[i].textContent = text;
  }
  function render() {
    var st = state();
    root.setAttribute("data-state", st);
    var panels = root.querySelectorAll("[data-panel]");
    for (var i = 0; i < panels.length; i++) panels[i].hidden = panels[i].getAttribute("data-panel") !== st;
    var open = st === "waiting" || st === "partial";
    var instructions = document.getElementById("instructions");
    if (instructions) instructions.hidden = !open;
    setField("received", amount(st === "partial" ? String(Math.max(Number(data.received), Number(data.detected))) : data.received));
    setField("confirmations", String(data.current));
    setField("required", String(data.required));
    setField("remaining", amount(data.remaining));
    if (data.txHash) setField("txHash", data.txHash);
    if (data.confirmedAt) {
      var at = root.querySelectorAll('time[data-field="confirmedAt"]');
      for (var j = 0; j < at.length; j++) at[j].setAttribute("datetime", data.confirmedAt);
      setField("confirmedAt", local(data.confirmedAt));
    }
    var stale = document.getElementById("qr-stale");
    if (stale) stale.hidden = !(open && qrAmount !== "" && qrAmount !== data.remaining);
    return st;
  }

  var countdown = document.getElementById("countdown");
  function tick() {
    var left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
    var h = Math.floor(left / 3600), m = Math.floor((left % 3600) / 60), s = left % 60;
    if (countdown) countdown.textContent = (h > 0 ? h + ":" + pad(m) : String(m)) + ":" + pad(s);
    if (left === 0) { clearInterval(timer); render(); }
  }
  var timer = setInterval(tick, 1000);
  tick();

  var copyButtons = root.querySelectorAll("button[data-copy]");
  for (var i = 0; i < copyButtons.length; i++) {
    (function (button) {
      var label = button.textContent;
      button.hidden = false;
      button.addEventListener("click", function () {
        var what = button.getAttribute("data-copy");
        var address = document.getElementById("address");
        var text = what === "address" ? (address ? address.textContent : "") : data.remaining;
        var done = function () {
          button.textContent = root.getAttribute("data-copied");
          setTimeout(function () { button.textContent = label; }, 2000);
        };
        var fallback = function () {
          var area = document.createElement("textarea");
          area.value = text;
          area.setAttribute("readonly", "");
          area.className = "offscreen";
          document.body.appendChild(area);
          area.select();
          try { document.execCommand("copy"); done(); } catch (e) { /* the text stays selectable */ }
          document.body.removeChild(area);
        };
        if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, fallback);
        else fallback();
      });
    })(copyButtons[i]);
  }

  function onStatus(event) {
    var d = JSON.parse(event.data);
    data.status = d.status;
    data.received = String(d.actualBalance);
    data.detected = String(d.detectedAmount);
    data.current = d.confirmations.current;
    data.required = d.confirmations.required;
    data.remaining = String(d.remaining);
    data.txHash = d.blockchainTxHash;
    data.confirmedAt = d.confirmedAt;
    render();
    // A closed session never changes again: no reconnection.
    if (d.status !== "pending" && source) { source.close(); source = null; }
  }
  if (window.EventSource) {
    source = new EventSource(root.getAttribute("data-events"));
    source.addEventListener("status", onStatus);
  }
  localTimes();
  render();
})();
`;
