-- posh's annotation files (annotations/*.posh, a user's own entries).
vim.filetype.add({ extension = { posh = 'posh' } })
