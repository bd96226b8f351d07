// The dashboard's only script (no inline script anywhere: the Content-Security-Policy forbids it).

document.documentElement.classList.add("js");

// Buttons shown only once this script runs (copy buttons) cannot take autofocus at parse time.
// A form sent back with errors puts focus on the first field in error instead, in view: the
// create form's permission error sat 1,178 px below a focused Name (issue 54).
const autofocused = document.querySelector("[autofocus]");
const firstError = document.querySelector("form .error[role=alert], form .form-errors[role=alert]");
const fieldInError = firstError && firstError.closest(".field, fieldset")?.querySelector(
  "input:not([type=hidden]):not([disabled]), select:not([disabled]), textarea:not([disabled])",
);
const focusFirst = fieldInError || autofocused;
if (focusFirst && document.activeElement !== focusFirst) focusFirst.focus({ preventScroll: true });
if (firstError) firstError.scrollIntoView({ block: "center" });
else if (focusFirst) focusFirst.scrollIntoView({ block: "nearest" });

const announcer = () => document.getElementById("announcer");

// Say something to screen-reader users without moving focus.
function announce(text) {
  const region = announcer();
  if (!region) return;
  region.textContent = "";
  setTimeout(() => { region.textContent = text; }, 50);
}

// Copy buttons: <button class="copy" data-copy-target="#id"> copies the target's text (or value).
document.addEventListener("click", async (event) => {
  const button = event.target.closest("button.copy");
  if (!button) return;
  const target = document.querySelector(button.dataset.copyTarget);
  if (!target) return;
  const text = ("value" in target ? target.value : target.textContent).trim();
  try {
    await navigator.clipboard.writeText(text);
    announce("Copied to the clipboard.");
  } catch {
    // Without clipboard permission (plain http, old browsers) select the text for Ctrl+C.
    if (target.select) {
      target.select();
    } else {
      const range = document.createRange();
      range.selectNodeContents(target);
      const selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
    announce("Selected: press Ctrl+C or Cmd+C to copy.");
  }
  const label = button.textContent;
  button.textContent = "Copied";
  setTimeout(() => { button.textContent = label; }, 1500);
});

// One in-page dialog for every destructive action. Resolves true when confirmed; focus goes
// back to the control that opened it either way.
function askToConfirm({ title, message, action, opener }) {
  const dialog = document.getElementById("confirm-dialog");
  if (!dialog || typeof dialog.showModal !== "function") {
    return Promise.resolve(window.confirm(message));
  }
  dialog.querySelector("#confirm-dialog-title").textContent = title || "Are you sure?";
  dialog.querySelector("#confirm-dialog-message").textContent = message;
  dialog.querySelector("#confirm-dialog-action").textContent = action || "Confirm";
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      const confirmed = dialog.returnValue === "confirm";
      if (opener && document.contains(opener)) opener.focus();
      resolve(confirmed);
    }, { once: true });
  });
}

function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
  } catch {
    return "";
  }
}

// Forms with data-confirm: without JavaScript they lead to a confirmation page (GET); here
// the dialog asks, then the action is posted directly with the form's hidden fields.
document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!form.dataset.confirm) return;
  event.preventDefault();
  const confirmed = await askToConfirm({
    title: form.dataset.confirmTitle,
    message: form.dataset.confirm,
    action: form.dataset.confirmAction,
    opener: event.submitter,
  });
  if (!confirmed) return;
  const post = document.createElement("form");
  post.method = "post";
  post.action = form.dataset.confirmPost || form.action;
  const fields = { csrfmiddlewaretoken: csrfToken() };
  for (const input of form.querySelectorAll("input[type=hidden]")) fields[input.name] = input.value;
  for (const [name, value] of Object.entries(fields)) {
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = name;
    input.value = value;
    post.appendChild(input);
  }
  document.body.appendChild(post);
  post.submit();
});

// htmx's hx-confirm asks through the same dialog instead of the browser's confirm().
document.addEventListener("htmx:confirm", async (event) => {
  if (!event.detail.question) return;
  event.preventDefault();
  const element = event.detail.elt;
  const confirmed = await askToConfirm({
    title: element.dataset.confirmTitle,
    message: event.detail.question,
    action: element.dataset.confirmAction,
    opener: element,
  });
  if (confirmed) event.detail.issueRequest(true);
});

// A visible note at the top of the page, as the server's messages are shown after a reload.
function showFlash(text) {
  const main = document.getElementById("main");
  if (!main || !text) return;
  let box = main.querySelector(".flashes");
  if (!box) {
    box = document.createElement("div");
    box.className = "flashes";
    main.prepend(box);
  }
  const flash = document.createElement("div");
  flash.className = "flash flash--success";
  flash.textContent = text;
  box.replaceChildren(flash);
}

// After an in-place change (a key revoked in its row): announce the outcome and put focus on
// the new content, since the button that was focused is gone.
document.addEventListener("htmx:afterSwap", (event) => {
  const root = event.detail.elt.isConnected ? event.detail.elt : document;
  const changed = root.querySelector?.("[data-announce]") || document.querySelector("[data-announce]");
  if (!changed) return;
  announce(changed.dataset.announce);
  showFlash(changed.dataset.announce);
  // A key revoked in place now counts among those the active list hides.
  const hidden = document.getElementById("inactive-count");
  if (hidden && changed.querySelector(".badge--revoked")) {  // (its class settles later)
    hidden.textContent = String(Number(hidden.textContent) + 1);
    document.getElementById("inactive-note").hidden = false;
  }
  const focusable = changed.querySelector("a, button") || changed;
  if (!focusable.hasAttribute("tabindex") && focusable === changed) changed.tabIndex = -1;
  focusable.focus();
  changed.removeAttribute("data-announce");
});

// The create form's shortcuts set every resource at once without a round trip (managing keys is
// never part of a shortcut).
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[name=preset]");
  if (!button) return;
  event.preventDefault();
  const access = { read: "read", full: "write", none: "none" }[button.value];
  for (const radio of button.form.querySelectorAll(`input[type=radio][name^=access_]:not([name=access_keys])[value=${access}]`)) {
    radio.checked = true;
  }
  announce(`${button.textContent} chosen.`);
});

// Searchable selects: <input data-filters="#select"> hides the options that do not match.
document.addEventListener("input", (event) => {
  const input = event.target.closest("input[data-filters]");
  if (!input) return;
  const select = document.querySelector(input.dataset.filters);
  const words = input.value.toLowerCase().replace("−", "-").split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const group of select.querySelectorAll("optgroup")) {
    let groupShown = 0;
    for (const option of group.querySelectorAll("option")) {
      // Each typed word starts a word of the zone's text: "est" finds EST, not Bucharest.
      const text = `${group.label} ${option.value.replace(/[/_]/g, " ")} ${option.textContent} ${option.dataset.keywords || ""}`
        .toLowerCase().replace("−", "-");
      const starts = text.split(/[\s(),]+/);
      const match = words.every((word) => starts.some((start) => start.startsWith(word)))
        || option.selected;
      option.hidden = !match;
      if (match) groupShown += 1;
    }
    group.hidden = groupShown === 0;
    shown += groupShown;
  }
  // The matches show as an open list under the search box (a closed select would still read
  // only the zone chosen before, "UTC", whatever was typed).
  select.size = words.length ? Math.min(Math.max(shown, 2), 8) : 0;
  const none = input.dataset.none && document.querySelector(input.dataset.none);
  const nothing = words.length > 0 && shown <= select.querySelectorAll("option:checked").length;
  if (none) none.hidden = !nothing;
  announce(nothing ? "No time zone matches." : `${shown} time zone${shown === 1 ? "" : "s"} match.`);
});

// Restrictions: a search box over each list of objects a key can be limited to. Without
// scripts the box stays hidden and the whole list of checkboxes works as it is.
for (const search of document.querySelectorAll("input.object-search")) {
  search.hidden = false;
  search.addEventListener("input", () => {
    const list = document.getElementById(search.getAttribute("aria-controls"));
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    for (const label of list.querySelectorAll("label")) {
      const text = label.textContent.toLowerCase();
      label.hidden = !(words.every((word) => text.includes(word)) || label.querySelector("input").checked);
    }
  });
}

// The object pickers of the create form follow its permissions: a resource the key gets no
// access to has nothing to pick. (Without JavaScript every picker shows; a choice for a resource
// the key cannot reach changes nothing.)
function syncPickers(form) {
  for (const group of form.querySelectorAll(".restriction-group[data-group]")) {
    const chosen = form.querySelector(`input[name=access_${group.dataset.group}]:checked`);
    if (chosen) group.hidden = chosen.value === "none";
  }
}
document.addEventListener("change", (event) => {
  if (event.target.matches?.("input[name^=access_]")) syncPickers(event.target.form);
});
document.addEventListener("click", (event) => {
  if (event.target.closest?.("button[name=preset]")) {
    const form = event.target.closest("form");
    setTimeout(() => syncPickers(form));
  }
});
for (const form of document.querySelectorAll("form")) {
  if (form.querySelector(".restriction-group[data-group]")) syncPickers(form);
}

// Each group's objects are picked only under "Only these": under "All" the picker hides and its
// boxes are disabled, so nothing ticked there is sent. (Without JavaScript the server refuses a
// tick under "All" with an error beside the group.)
function syncLimit(group) {
  const all = group.querySelector("input[type=radio][value=all]");
  if (!all) return;
  group.dataset.mode = all.checked ? "all" : "selected";
  const picker = group.querySelector(".object-picker");
  if (!picker) return;
  picker.hidden = all.checked;
  for (const box of picker.querySelectorAll("input")) box.disabled = all.checked;
}
document.addEventListener("change", (event) => {
  if (event.target.matches?.("input[name^=limit_]")) syncLimit(event.target.closest(".restriction-group"));
});
for (const group of document.querySelectorAll(".restriction-group[data-group]")) syncLimit(group);

// Phones: the Menu button opens the navigation (and the workspace switcher in it).
const menuToggle = document.querySelector(".menu-toggle");
if (menuToggle) {
  menuToggle.addEventListener("click", () => {
    const open = menuToggle.getAttribute("aria-expanded") !== "true";
    menuToggle.setAttribute("aria-expanded", String(open));
    document.getElementById("sidenav").classList.toggle("open", open);
  });
}

// The key list's "Revoke selected…" shows once a key is ticked, and says how many (without
// JavaScript it is always there, and the server says when nothing was ticked).
const bulkRevoke = document.querySelector("button.bulk-revoke");
function syncBulkRevoke() {
  const ticked = document.querySelectorAll("input[type=checkbox][name=keys][form=bulk-revoke]:checked").length;
  bulkRevoke.hidden = ticked === 0;
  bulkRevoke.textContent = ticked > 1 ? `Revoke ${ticked} selected keys…` : "Revoke the selected key…";
}
if (bulkRevoke) {
  syncBulkRevoke();
  document.addEventListener("change", (event) => {
    if (event.target.matches?.("input[name=keys][form=bulk-revoke]")) syncBulkRevoke();
  });
}

// A row's actions menu (⋯) opens beside its button, fixed to the window so that no card's
// scrolling edge cuts it off (above the button when there is no room below), and closes on a
// click elsewhere, on Escape, and when another opens.
function placeRowMenu(menu) {
  const items = menu.querySelector(".row-menu-items");
  const button = menu.querySelector("summary").getBoundingClientRect();
  const box = items.getBoundingClientRect();
  const below = button.bottom + 4 + box.height <= window.innerHeight;
  items.style.top = `${below ? button.bottom + 4 : Math.max(4, button.top - 4 - box.height)}px`;
  // Its right edge under the button's, or its left edge when there is no room on the left.
  const left = button.right - box.width >= 4 ? button.right - box.width : button.left;
  items.style.left = `${Math.max(4, Math.min(left, window.innerWidth - box.width - 4))}px`;
}
document.addEventListener("toggle", (event) => {
  const menu = event.target;
  if (!(menu instanceof HTMLDetailsElement) || !menu.classList.contains("row-menu") || !menu.open) return;
  for (const other of document.querySelectorAll("details.row-menu[open]")) {
    if (other !== menu) other.open = false;
  }
  placeRowMenu(menu);
}, true);
// Scrolling the page or a card moves the button: the menu follows it.
for (const type of ["scroll", "resize"]) {
  window.addEventListener(type, () => {
    for (const menu of document.querySelectorAll("details.row-menu[open]")) placeRowMenu(menu);
  }, true);
}
document.addEventListener("click", (event) => {
  if (event.target.closest("dialog")) return;  // its Revoke's confirmation: the menu stays
  for (const menu of document.querySelectorAll("details.row-menu[open]")) {
    if (!menu.contains(event.target)) menu.open = false;
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape") return;
  for (const menu of document.querySelectorAll("details.row-menu[open]")) {
    menu.open = false;
    menu.querySelector("summary").focus();
  }
});
