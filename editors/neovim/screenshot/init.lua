-- The configuration screenshot.sh runs Neovim with (nvim --clean -u this): the plugin as a user
-- would set it up, a fixed look, and a signal file once the hints and lenses are drawn.
local plugin = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')
vim.opt.runtimepath:prepend(plugin)
vim.cmd('filetype plugin indent on')
vim.cmd('syntax on')

-- A fixed look, whatever the terminal answers to Neovim's queries.
vim.o.termguicolors = true
vim.o.background = 'dark'
vim.cmd.colorscheme('default')
vim.o.number = true
vim.o.signcolumn = 'yes'
vim.o.laststatus = 2
vim.o.ruler = true
vim.o.showmode = false
vim.o.shortmess = vim.o.shortmess .. 'IF'
vim.o.swapfile = false
vim.diagnostic.config({ virtual_text = true })
-- Neovim's default scheme draws hints and lenses as dim as line numbers; here they stand out a
-- little, as many colour schemes make them (NvimLightCyan and NvimLightYellow on grey).
vim.api.nvim_set_hl(0, 'LspInlayHint', { fg = '#8cf8f7', bg = '#2c2e33' })
vim.api.nvim_set_hl(0, 'LspCodeLens', { fg = '#fce094' })

require('posh').setup({ cmd = { vim.env.POSH_LSP } })

-- Ready: the server attached, its inlay hints and code lenses arrived, and its diagnostics
-- were published; then a redraw, and the file screenshot.sh waits for.
local ready = vim.env.POSH_SCREENSHOT_READY
local timer = assert(vim.uv.new_timer())
local since
timer:start(100, 50, vim.schedule_wrap(function()
  local bufnr = vim.api.nvim_get_current_buf()
  local client = require('posh').clients(bufnr)[1]
  if not client then
    return
  end
  local lenses = vim.api.nvim_buf_get_extmarks(bufnr, vim.api.nvim_create_namespace('nvim.lsp.codelens:' .. client.id), 0, -1, {})
  local hints = vim.lsp.inlay_hint.get({ bufnr = bufnr })
  if #hints == 0 or #lenses == 0 then
    return
  end
  -- The diagnostics come after the server's debounce (150 ms): give them a second.
  since = since or vim.uv.now()
  if vim.uv.now() - since < 1000 then
    return
  end
  timer:stop()
  vim.cmd('echo ""')
  vim.cmd('redraw!')
  if ready then
    vim.fn.writefile({ tostring(#hints) }, ready)
  end
end))
