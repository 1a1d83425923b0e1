#!/usr/bin/perl
# Turns one subcommand's `redlock SUB --help` (CLI11's layout, on stdin) into
# roff for the SUBCOMMANDS section of redlock(1), on stdout. help2man formats
# only the top-level --help; its own option heuristics need two spaces between
# an option and its description, which CLI11 does not always leave.
#
# Usage: help2roff.pl SUB < help-text >> subcommands.h2m
use strict;
use warnings;

my $sub = shift @ARGV or die "usage: help2roff.pl SUB < help-text\n";
# CLI11 pads an option's names to this column and starts the description
# there; names that reach it push the description onto the next line.
my $column = 30;

# roff text: minus signs, not hyphens, so that flags can be copied; ASCII
# quotes; a leading . or ' would be a request, a leading [ or / a help2man
# include-file section or pattern.
sub esc {
    my ($text) = @_;
    $text =~ s/\\/\\e/g;
    $text =~ s/-/\\-/g;
    $text =~ s/'/\\(aq/g;
    $text =~ s/`/\\(ga/g;
    $text =~ s/^([.\[\/])/\\&$1/;
    return $text;
}

my @lines = map { s/\s+\z//r } <STDIN>;
my $continuation = qr/^ {$column}\S/;

print ".SS \"redlock $sub\"\n";
my $i = 0;
# The description, up to the "Usage:" line (which the heading replaces).
my @description;
for (; $i < @lines && $lines[$i] !~ /^Usage:/; $i++) {
    push @description, esc($lines[$i]) if $lines[$i] ne '';
}
print join("\n", @description), "\n" if @description;
$i++ while $i < @lines && $lines[$i] !~ /^Options:/;
die "help2roff.pl: no 'Options:' in the help of $sub\n" if $i == @lines;
$i++;

# Options: "  NAMES[ TYPE...]" padded to the column, then the description, or
# alone on their line with the description on the next ones.
for (; $i < @lines && $lines[$i] ne ''; $i++) {
    my $line = $lines[$i];
    die "help2roff.pl: unexpected line in the options of $sub: '$line'\n" unless $line =~ /^  -/;
    my $next_continues = $i + 1 < @lines && $lines[$i + 1] =~ $continuation;
    my ($spec, @text);
    if (length($line) > $column && substr($line, $column - 1, 1) eq ' ' && !$next_continues) {
        $spec = substr($line, 0, $column) =~ s/^\s+|\s+\z//gr;
        push @text, substr($line, $column);
    } else {
        $spec = $line =~ s/^\s+//r;
    }
    push @text, $lines[++$i] =~ s/^\s+//r while $i + 1 < @lines && $lines[$i + 1] =~ $continuation;
    my ($names, $rest) = $spec =~ /^(\S+)\s*(.*)$/;
    print ".TP\n", join(', ', map { '\fB' . esc($_) . '\fR' } split /,/, $names);
    print ' ', esc($rest) if $rest ne '';
    print "\n", join("\n", map { esc($_) } @text), "\n";
}

# The footer: prose is refilled, indented lines (tables, the second usage
# line) keep their layout, blank lines separate paragraphs.
my ($paragraph, $nofill) = (1, 0);
for (; $i < @lines; $i++) {
    my $line = $lines[$i];
    if ($line eq '') {
        print ".fi\n" if $nofill;
        ($paragraph, $nofill) = (1, 0);
        next;
    }
    print ".PP\n" if $paragraph;
    $paragraph = 0;
    if ($line =~ /^\s/ && !$nofill) {
        print ".nf\n";
        $nofill = 1;
    } elsif ($line !~ /^\s/ && $nofill) {
        print ".fi\n";
        $nofill = 0;
    }
    print esc($line), "\n";
}
print ".fi\n" if $nofill;
