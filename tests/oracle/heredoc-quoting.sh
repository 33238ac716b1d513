# Here-documents: unquoted (expanded), quoted (literal), <<- (leading tabs stripped).
# status: 0
name=posh
cat <<EOT
hello $name $(echo sub) $((1 + 2)) \$literal
EOT
cat <<'EOT'
hello $name $(echo sub) $((1 + 2)) \$literal
EOT
cat <<"EOT" | tr a-z A-Z
quoted with double quotes $name
EOT
	cat <<-EOT
		tab-indented $name
			two tabs
	EOT
sort <<EOT > sorted-heredoc.txt
pear
apple
$name
EOT
cat sorted-heredoc.txt
