#!/usr/bin/perl
# dualbench's Perl CGI script for study S2: the 45-byte page, through the CGI interface.
use strict;
use warnings;
print "Content-Type: text/html\r\n\r\n";
print "<html><body><h1>It works!</h1></body></html>\n";
