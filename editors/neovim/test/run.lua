-- Neovim as posh-lsp's client, headless:
--
--   POSH_LSP=posh-lsp POSH_SCRIPT=ws/count.sh POSH_HOVER_AT=grep POSH_ANNOTATIONS=ws/a/x.posh \
--     nvim --headless --clean -u NONE -l editors/neovim/test/run.lua
--
-- Puts the plugin (this file's ../) on the runtimepath, calls require('posh').setup() as a user's
-- init.lua would (with the settings of $POSH_SETTINGS, a JSON object, when set), opens
-- $POSH_SCRIPT, waits for posh-lsp to attach and for what the plugin turned on, and prints:
--   FILETYPE script <filetype>         ROOT <the client's root directory>
--   ENCODING <the client's offset encoding>
--   INLAY enabled <true|false>
--   HINT line:col label                (0-based line and byte column, where Neovim draws the
--                                       hint: it converts the server's UTF-16 positions)
--   LENS line: text                    (the code lenses as displayed: virtual text per line)
--   HOVER text                         (the hover at the first $POSH_HOVER_AT, line by line)
--   DIAG line: source [code] message   (1-based lines, once the server's debounce published)
-- then opens $POSH_ANNOTATIONS, an annotation file with a broken entry:
--   FILETYPE annotation <ft>   SYNTAX <b:current_syntax>   COMMENTSTRING <cms>   SHIFTWIDTH <sw>
--   SYNGROUP word group        (syntax/posh.vim's group at each of $POSH_SYNTAX_WORDS, |-separated)
--   ADIAG line: source [code] message  AHOVER <first line of the hover on `filters_input`>
--   AACTION title              (the quick fixes of the first diagnostic)
--   AFIXED line                (that line once the first one is applied)
-- and stops the server: SHUTDOWN exit <code> signal <signal>.
-- Exits 1 (with a FAIL line) on an error or a timeout.

local TIMEOUT = tonumber(vim.env.POSH_TIMEOUT_MS or '') or 20000

local function out(fmt, ...)
  io.stdout:write(string.format(fmt, ...), '\n')
end

local function fail(fmt, ...)
  out('FAIL ' .. fmt, ...)
  io.stdout:flush()
  os.exit(1)
end

local function env(name)
  local value = vim.env[name]
  if not value or value == '' then
    fail('$%s is not set', name)
  end
  return value
end

local function wait(what, condition)
  if not vim.wait(TIMEOUT, condition, 20) then
    fail('timed out after %d ms waiting for %s', TIMEOUT, what)
  end
end

local function one_line(text)
  return (text:gsub('%s*\n%s*', ' '))
end

local function label_of(hint)
  if type(hint.label) == 'string' then
    return hint.label
  end
  local parts = {}
  for _, part in ipairs(hint.label) do
    parts[#parts + 1] = part.value
  end
  return table.concat(parts)
end

local function print_diagnostics(prefix, bufnr)
  local diagnostics = vim.diagnostic.get(bufnr)
  table.sort(diagnostics, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  for _, d in ipairs(diagnostics) do
    out('%s %d: %s [%s] %s', prefix, d.lnum + 1, d.source or '?', d.code or '', one_line(d.message))
  end
end

--- The posh client of a buffer, once it has initialized.
local function attached(bufnr)
  local client
  wait('posh-lsp to attach', function()
    client = require('posh').clients(bufnr)[1]
    return client ~= nil and client.initialized and vim.lsp.buf_is_attached(bufnr, client.id)
  end)
  return client
end

--- A request on the buffer's client, synchronously; the first error fails the test.
local function request(client, bufnr, method, params)
  local response, err = client:request_sync(method, params, TIMEOUT, bufnr)
  if not response then
    fail('%s: %s', method, tostring(err))
  end
  if response.err then
    fail('%s: %s', method, vim.inspect(response.err))
  end
  return response.result
end

--- Moves the cursor to the first occurrence of `text` and returns the hover there.
local function hover_at(client, bufnr, text)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, true)
  for row, line in ipairs(lines) do
    local col = line:find(text, 1, true)
    if col then
      vim.api.nvim_win_set_cursor(0, { row, col - 1 })
      local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
      local result = request(client, bufnr, 'textDocument/hover', params)
      if not result or not result.contents then
        fail('no hover at %q', text)
      end
      local contents = result.contents
      return type(contents) == 'string' and contents or contents.value
    end
  end
  fail('%q is not in the buffer', text)
end

local ok, err = xpcall(function()
  local here = debug.getinfo(1, 'S').source:sub(2)
  local plugin = vim.fn.fnamemodify(here, ':p:h:h')
  vim.opt.runtimepath:prepend(plugin)
  vim.cmd('filetype plugin indent on')
  vim.cmd('syntax on')

  local settings = vim.env.POSH_SETTINGS and vim.json.decode(vim.env.POSH_SETTINGS) or {}
  local exits = {}
  require('posh').setup({ cmd = { env('POSH_LSP') }, settings = settings })
  -- The test's own addition, merged into the plugin's configuration: how the server ended.
  vim.lsp.config('posh', {
    on_exit = function(code, signal)
      exits[#exits + 1] = { code = code, signal = signal }
    end,
  })

  -- The script.
  vim.cmd.edit(vim.fn.fnameescape(env('POSH_SCRIPT')))
  local script = vim.api.nvim_get_current_buf()
  out('FILETYPE script %s', vim.bo[script].filetype)
  local client = attached(script)
  out('ROOT %s', client.root_dir or '')
  out('ENCODING %s', client.offset_encoding)

  -- Inlay hints, as the plugin turned them on: Neovim asks for them itself.
  out('INLAY enabled %s', tostring(vim.lsp.inlay_hint.is_enabled({ bufnr = script })))
  local hints
  wait('inlay hints', function()
    hints = vim.lsp.inlay_hint.get({ bufnr = script })
    return #hints > 0
  end)
  table.sort(hints, function(a, b)
    local p, q = a.inlay_hint.position, b.inlay_hint.position
    return p.line < q.line or (p.line == q.line and p.character < q.character)
  end)
  for _, item in ipairs(hints) do
    local position = item.inlay_hint.position
    out('HINT %d:%d %s', position.line, position.character, label_of(item.inlay_hint))
  end

  -- Code lenses, as displayed: end-of-line virtual text in the client's namespace.
  local namespace = vim.api.nvim_create_namespace('nvim.lsp.codelens:' .. client.id)
  local marks
  wait('code lenses', function()
    marks = vim.api.nvim_buf_get_extmarks(script, namespace, 0, -1, { details = true })
    return #marks > 0
  end)
  for _, mark in ipairs(marks) do
    local text = {}
    for _, chunk in ipairs(mark[4].virt_text or {}) do
      text[#text + 1] = chunk[1]
    end
    out('LENS %d: %s', mark[2] + 1, table.concat(text))
  end

  for _, line in ipairs(vim.split(hover_at(client, script, env('POSH_HOVER_AT')), '\n')) do
    out('HOVER %s', line)
  end

  -- Diagnostics come after the server's debounce.
  wait('diagnostics of the script', function()
    return #vim.diagnostic.get(script) > 0
  end)
  print_diagnostics('DIAG', script)

  -- An annotation file: the plugin's filetype, syntax and ftplugin, and the same server.
  vim.cmd.edit(vim.fn.fnameescape(env('POSH_ANNOTATIONS')))
  local annotations = vim.api.nvim_get_current_buf()
  out('FILETYPE annotation %s', vim.bo[annotations].filetype)
  out('SYNTAX %s', vim.b[annotations].current_syntax or '')
  out('COMMENTSTRING %s', vim.bo[annotations].commentstring)
  out('SHIFTWIDTH %d', vim.bo[annotations].shiftwidth)
  -- syntax/posh.vim's groups at the first occurrence of each word.
  local text = vim.api.nvim_buf_get_lines(annotations, 0, -1, true)
  for _, word in ipairs(vim.split(vim.env.POSH_SYNTAX_WORDS or '', '|', { plain = true, trimempty = true })) do
    for row, line in ipairs(text) do
      local col = line:find(word, 1, true)
      if col then
        out('SYNGROUP %s %s', word, vim.fn.synIDattr(vim.fn.synID(row, col, 1), 'name'))
        break
      end
    end
  end
  local aclient = attached(annotations)
  if aclient.id ~= client.id then
    out('NOTE a second server for the annotation file (root %s)', aclient.root_dir or '')
  end
  wait('diagnostics of the annotation file', function()
    return #vim.diagnostic.get(annotations) > 0
  end)
  print_diagnostics('ADIAG', annotations)
  out('AHOVER %s', vim.split(hover_at(aclient, annotations, 'filters_input'), '\n')[1])

  -- The quick fix of the first diagnostic, applied as `gra` would.
  local diagnostic = vim.diagnostic.get(annotations)[1]
  local lsp_diagnostic = diagnostic.user_data and diagnostic.user_data.lsp
  local actions = request(aclient, annotations, 'textDocument/codeAction', {
    textDocument = vim.lsp.util.make_text_document_params(annotations),
    range = lsp_diagnostic.range,
    context = { diagnostics = { lsp_diagnostic }, only = { 'quickfix' } },
  }) or {}
  for _, action in ipairs(actions) do
    out('AACTION %s', action.title)
  end
  if actions[1] and actions[1].edit then
    vim.lsp.util.apply_workspace_edit(actions[1].edit, aclient.offset_encoding)
    out('AFIXED %s', vim.api.nvim_buf_get_lines(annotations, diagnostic.lnum, diagnostic.lnum + 1, true)[1])
  end

  -- Shutdown and exit, as Neovim sends them.
  for _, c in ipairs(vim.lsp.get_clients({ name = 'posh' })) do
    c:stop()
  end
  wait('posh-lsp to exit', function()
    return #vim.lsp.get_clients({ name = 'posh' }) == 0 and #exits > 0
  end)
  for _, e in ipairs(exits) do
    out('SHUTDOWN exit %d signal %d', e.code, e.signal)
  end
end, debug.traceback)

if not ok then
  fail('%s', one_line(tostring(err)))
end
io.stdout:flush()
os.exit(0)
